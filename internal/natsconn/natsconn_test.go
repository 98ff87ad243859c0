package natsconn

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"
	"go.uber.org/zap/zaptest"

	"github.com/jetjob/jetjob/internal/config"
	"github.com/jetjob/jetjob/internal/configtest"
	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/testpki"
	"github.com/jetjob/jetjob/internal/testtier"
)

// A server that requires TLS with client certificates and a password is
// reached with the options' CA, certificate and credentials; without the
// client certificate or with a wrong password it is not, and the error does
// not show the password.
func TestConnectTLSAndAuth(t *testing.T) {
	testtier.Needs(t, testtier.NATS)
	pki, err := testpki.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), TLS: pki.ServerTLS(), User: "jj", Password: "s3cret-pw"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	log := zaptest.NewLogger(t)
	good := Options{URL: srv.ClientURL(), User: "jj", Password: "s3cret-pw", TLSCA: pki.CAFile,
		TLSCert: pki.ClientCert, TLSKey: pki.ClientKey, Name: "test"}

	nc, err := Connect(good, log, nats.Timeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(ctx); err != nil {
		t.Fatalf("JetStream over TLS: %v", err)
	}
	if !nc.TLSRequired() {
		t.Error("connection is not TLS")
	}

	noCert := good
	noCert.TLSCert, noCert.TLSKey = "", ""
	wrongPW := good
	wrongPW.Password = "hunter2"
	wrongPW.URL = strings.Replace(srv.ClientURL(), "nats://", "nats://jj:hunter2@", 1)
	for name, o := range map[string]Options{"no client certificate": noCert, "wrong password": wrongPW} {
		nc, err := Connect(o, log, nats.RetryOnFailedConnect(false), nats.Timeout(5*time.Second))
		if err == nil {
			nc.Close()
			t.Errorf("%s: connected", name)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error shows the password: %v", name, err)
		}
	}
}

func TestValidate(t *testing.T) {
	pki, err := testpki.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		o    Options
		want []string // none: valid
	}{
		{"defaults", Options{URL: DefaultURL}, nil},
		{"TLS and password", Options{URL: "tls://a:4222,b:4222", User: "u", Password: "p", TLSCA: pki.CAFile, TLSCert: pki.ClientCert, TLSKey: pki.ClientKey}, nil},
		{"bad scheme", Options{URL: "http://u:hunter2@x"}, []string{"--nats-url / JETJOB_NATS_URL", "u:xxxxx@x"}},
		{"no URL", Options{URL: " , "}, []string{"--nats-url / JETJOB_NATS_URL: no URL given"}},
		{"user without password", Options{URL: DefaultURL, User: "u"}, []string{"--nats-user / JETJOB_NATS_USER: give both"}},
		{"two methods", Options{URL: DefaultURL, Token: "t", Creds: pki.CAFile}, []string{"choose one of"}},
		{"missing creds", Options{URL: DefaultURL, Creds: "/nonexistent.creds"}, []string{"--nats-creds / JETJOB_NATS_CREDS"}},
		{"CA not PEM", Options{URL: DefaultURL, TLSCA: notPEM}, []string{"--nats-tls-ca / JETJOB_NATS_TLS_CA", "holds no PEM certificate"}},
		{"cert without key", Options{URL: DefaultURL, TLSCert: pki.ClientCert}, []string{"--nats-tls-cert / JETJOB_NATS_TLS_CERT: give both"}},
		{"key of another cert", Options{URL: DefaultURL, TLSCert: pki.ClientCert, TLSKey: pki.ServerKey}, []string{"--nats-tls-cert"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var o Options
			s := config.New(pflag.NewFlagSet("test", pflag.ContinueOnError))
			o.Register(s, DefaultURL)
			err := c.o.Validate(s)
			configtest.WantErr(t, err, c.want...)
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}

func TestRedacted(t *testing.T) {
	got := Redacted("nats://u:pw@a:4222, tok@b:4222,nats://c:4222")
	if want := "nats://u:xxxxx@a:4222,nats://xxxxx@b:4222,nats://c:4222"; got != want {
		t.Errorf("Redacted = %q, want %q", got, want)
	}
}
