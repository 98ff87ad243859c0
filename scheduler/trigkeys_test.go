package scheduler_test

import (
	"github.com/jetjob/jetjob/shared/trigsign"
)

// The tests' schedulers sign their triggers with testTriggerSigner, and
// their workers accept its public key (testTriggerKeys), as deployed ones
// do with --trigger-signing-key and JETJOB_TRIGGER_PUBLIC_KEYS.
var testTriggerSigner, testTriggerKeys = func() (*trigsign.Signer, *trigsign.Verifier) {
	priv, err := trigsign.GenerateKey()
	if err != nil {
		panic(err)
	}
	s, err := trigsign.NewSigner(priv)
	if err != nil {
		panic(err)
	}
	v, err := trigsign.NewVerifier(s.PublicKey())
	if err != nil {
		panic(err)
	}
	return s, v
}()
