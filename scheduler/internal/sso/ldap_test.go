package sso_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/internal/ldaptest"
	"github.com/jetjob/jetjob/scheduler/internal/sso"
)

// directory is the test directory: lena in jj-ops and staff, omar in
// staff.
func directory(t *testing.T) *ldaptest.Server {
	return ldaptest.StartTest(t,
		[]ldaptest.User{{UID: "lena", Name: "Lena Ldap", Password: "lena-pw"}, {UID: "omar", Name: "Omar", Password: "omar-pw"}},
		[]ldaptest.Group{{Name: "jj-ops", Members: []string{"lena"}}, {Name: "staff", Members: []string{"lena", "omar"}}})
}

func ldapConfig(d *ldaptest.Server, startTLS bool) sso.LDAPConfig {
	c := sso.LDAPConfig{Name: "Corporate directory", URL: d.URL, CAFile: d.CAFile, BindDN: ldaptest.ServiceDN,
		BindPassword: ldaptest.ServicePass, UserBase: ldaptest.UserBase, GroupBase: ldaptest.GroupBase}
	if startTLS {
		c.URL, c.StartTLS = d.StartTLSURL, true
	}
	return c
}

func newLDAP(t *testing.T, c sso.LDAPConfig) *sso.LDAP {
	t.Helper()
	cfg := &sso.Config{LDAP: &c}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	l, err := sso.NewLDAP(*cfg.LDAP)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Against a real slapd, over LDAPS and over StartTLS: the service
// account finds the user, a bind as the user checks the password, and a
// group search finds their groups; a wrong or empty password and an
// unknown user are one answer.
func TestLDAPAuthenticate(t *testing.T) {
	t.Parallel()
	d := directory(t)
	for _, startTLS := range []bool{false, true} {
		l := newLDAP(t, ldapConfig(d, startTLS))
		id, err := l.Authenticate("lena", "lena-pw")
		if err != nil {
			t.Fatalf("startTLS=%v: %v", startTLS, err)
		}
		slices.Sort(id.Groups)
		if id.Name != "lena" || id.DisplayName != "Lena Ldap" || id.Subject != "uid=lena,"+ldaptest.UserBase ||
			!slices.Equal(id.Groups, []string{"jj-ops", "staff"}) {
			t.Fatalf("startTLS=%v: identity %+v", startTLS, id)
		}
		for _, c := range []struct{ name, pw string }{{"lena", "wrong"}, {"lena", ""}, {"nobody", "lena-pw"}} {
			if _, err := l.Authenticate(c.name, c.pw); !errors.Is(err, sso.ErrWrongPassword) {
				t.Fatalf("startTLS=%v: %s/%q: %v, want ErrWrongPassword", startTLS, c.name, c.pw, err)
			}
		}
	}
}

// A server whose certificate is not signed by the configured CA is not
// talked to: the password would go to an impostor.
func TestLDAPRefusesUntrustedServer(t *testing.T) {
	t.Parallel()
	d := directory(t)
	c := ldapConfig(d, false)
	c.CAFile = ""
	if _, err := newLDAP(t, c).Authenticate("lena", "lena-pw"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("untrusted server: %v", err)
	}
}

// A user name that would change the search filter is refused before the
// directory is asked; the filter escapes it anyway.
func TestLDAPInjectionRefused(t *testing.T) {
	t.Parallel()
	d := directory(t)
	l := newLDAP(t, ldapConfig(d, false))
	for _, name := range []string{"*)(uid=*", "*", "lena)(|(uid=*", `lena\2a`} {
		_, err := l.Authenticate(name, "lena-pw")
		var ref *sso.Refused
		if !errors.As(err, &ref) || !strings.Contains(ref.Reason, "would change the directory search") {
			t.Fatalf("name %q: %v, want a refusal naming the characters", name, err)
		}
	}
	if got := l.UserFilter("*)(uid=*"); got != `(uid=\2a\29\28uid=\2a)` {
		t.Fatalf("filter of an injection attempt: %s", got)
	}
}
