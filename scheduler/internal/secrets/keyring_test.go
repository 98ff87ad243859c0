package secrets

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// A value sealed under a keyring opens with it, and not with another key
// under the same id, nor as another group's or name's secret; the stored
// bytes do not hold the value.
func TestSealOpenRoundTripAndWrongKeyRefused(t *testing.T) {
	kr, err := ParseKeyring("k1:" + GenerateKey())
	if err != nil {
		t.Fatal(err)
	}
	value := []byte("hunter2-the-password")
	s, err := kr.Seal("g", "db", value)
	if err != nil {
		t.Fatal(err)
	}
	if s.KeyID != "k1" || bytes.Contains(s.Ciphertext, value) {
		t.Fatalf("sealed %+v: want key k1 and no clear text", s)
	}
	if got, err := kr.Open("g", "db", s); err != nil || !bytes.Equal(got, value) {
		t.Fatalf("open: %q, %v", got, err)
	}
	other, _ := ParseKeyring("k1:" + GenerateKey())
	if _, err := other.Open("g", "db", s); !errors.Is(err, ErrWrongKey) {
		t.Errorf("another key under the same id: %v, want ErrWrongKey", err)
	}
	if _, err := kr.Open("h", "db", s); !errors.Is(err, ErrWrongKey) {
		t.Errorf("opened as another group's secret: %v, want ErrWrongKey", err)
	}
	if _, err := (Keyring{}).Seal("g", "db", value); !errors.Is(err, ErrNoKey) {
		t.Errorf("seal without a key: %v, want ErrNoKey", err)
	}
}

// A keyring is one key or id:key pairs, the first the primary; anything
// else is refused saying what is wrong.
func TestParseKeyring(t *testing.T) {
	a, b := GenerateKey(), GenerateKey()
	kr, err := ParseKeyring("new:" + a + ", old:" + b)
	if err != nil || kr.Primary() != "new" || len(kr.keys) != 2 {
		t.Fatalf("%+v, %v: want primary new of 2 keys", kr, err)
	}
	for spec, want := range map[string]string{
		"k1:notbase64!":      "not base64",
		"k1:c2hvcnQ=":        "want 32",
		"a:" + a + ",a:" + b: "given twice",
		"bad id!:" + a:       "key id",
	} {
		if _, err := ParseKeyring(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", spec, err, want)
		}
	}
}
