package scheduler_test

import (
	"crypto/ed25519"
	"encoding/base64"

	"github.com/jetjob/jetjob/shared/trigsign"
)

// The tests' schedulers sign their triggers with testTriggerSigner (a
// scheduler binary the tests start gets testTriggerKeyEnv), and their
// workers accept its public key (testTriggerKeys), as deployed ones do
// with --trigger-signing-key and JETJOB_TRIGGER_PUBLIC_KEYS.
var (
	testTriggerKey                     = mustKey()
	testTriggerSigner, testTriggerKeys = signerAndVerifier(testTriggerKey)
	// testTriggerKeyEnv gives a jetjob-scheduler process the key.
	testTriggerKeyEnv = "JETJOB_TRIGGER_SIGNING_KEY=" + base64.StdEncoding.EncodeToString(testTriggerKey.Seed())
)

func mustKey() ed25519.PrivateKey {
	priv, err := trigsign.GenerateKey()
	if err != nil {
		panic(err)
	}
	return priv
}

func signerAndVerifier(priv ed25519.PrivateKey) (*trigsign.Signer, *trigsign.Verifier) {
	s, v, err := trigsign.Pair(priv)
	if err != nil {
		panic(err)
	}
	return s, v
}
