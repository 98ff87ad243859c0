package e2e

import (
	"crypto/ed25519"
	"encoding/base64"

	"github.com/jetjob/jetjob/shared/trigsign"
)

// triggerKey is the suite's trigger signing key pair, as an operator makes
// one (jetjob-scheduler trigger-key generate --env): the schedulers get the
// private key, the workers the public one.
var triggerKey = func() (k struct{ env, public string }) {
	priv, err := trigsign.GenerateKey()
	if err != nil {
		panic(err)
	}
	k.env = base64.StdEncoding.EncodeToString(priv.Seed())
	k.public = trigsign.EncodePublicKey(priv.Public().(ed25519.PublicKey))
	return k
}()
