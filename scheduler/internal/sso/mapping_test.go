package sso_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/jetjob/jetjob/scheduler/internal/sso"
)

func TestMappingApply(t *testing.T) {
	t.Parallel()
	m := sso.Mapping{AdminGroups: []string{"jj-admins"}, Grants: []sso.GrantRule{
		{From: "ops", Group: "billing", Role: "operator"},
		{From: "scripters", Group: "billing", Role: "operator", Scripts: true},
		{From: "readers", Group: "billing", Role: "viewer"},
		{From: "readers", Group: "etl", Role: "viewer"},
	}}
	for _, c := range []struct {
		groups []string
		want   sso.Standing
		ok     bool
	}{
		{nil, sso.Standing{}, false},
		{[]string{"staff"}, sso.Standing{}, false},
		{[]string{"jj-admins"}, sso.Standing{Admin: true}, true},
		{[]string{"readers"}, sso.Standing{Grants: []sso.Grant{{Group: "billing", Role: "viewer"}, {Group: "etl", Role: "viewer"}}}, true},
		// The higher role wins; scripts comes from any operator rule.
		{[]string{"readers", "scripters"}, sso.Standing{Grants: []sso.Grant{{Group: "billing", Role: "operator", Scripts: true}, {Group: "etl", Role: "viewer"}}}, true},
		{[]string{"scripters", "ops", "readers"}, sso.Standing{Grants: []sso.Grant{{Group: "billing", Role: "operator", Scripts: true}, {Group: "etl", Role: "viewer"}}}, true},
		// Group names are compared exactly.
		{[]string{"Readers"}, sso.Standing{}, false},
	} {
		got, ok := m.Apply(c.groups)
		if ok != c.ok || !reflect.DeepEqual(got, c.want) {
			t.Errorf("groups %v: %+v %v, want %+v %v", c.groups, got, ok, c.want, c.ok)
		}
	}
}

// The configuration file is read strictly, secrets come from files or
// the environment, and each wrong setting is named.
func TestLoadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secret := write("secret", "from-a-file\n")
	good := write("good.yaml", `public_url: https://jetjob.example.com/
oidc:
  - id: corp
    name: Corp SSO
    issuer: https://idp.example.com
    client_id: jetjob
    client_secret_file: `+secret+`
    mapping:
      grants: [{from: ops, group: billing, role: operator, scripts: true}]
  - id: okta-eu
    issuer: https://example.okta.com
    client_id: jetjob2
ldap:
  url: ldaps://ldap.example.com
  user_base: ou=people,dc=example,dc=com
  member_of_attribute: memberOf
`)
	env := map[string]string{"JETJOB_SSO_OKTA_EU_CLIENT_SECRET": "from-env", "JETJOB_SSO_LDAP_BIND_PASSWORD": "bind-pw"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c, err := sso.LoadFile(good, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if c.PublicURL != "https://jetjob.example.com" || c.OIDC[0].ClientSecret != "from-a-file" || c.OIDC[1].ClientSecret != "from-env" ||
		c.LDAP.BindPassword != "bind-pw" || c.OIDC[1].Name != "okta-eu" || c.OIDC[0].GroupsClaim != "groups" || c.LDAP.UserFilter != "(uid={username})" {
		t.Fatalf("loaded %+v", c)
	}
	for _, bad := range []struct{ text, want string }{
		{"oidc:\n  - id: corp\n    issuer: https://i\n    client_id: x\n    clientsecret: y\n", "field clientsecret not found"},
		{"public_url: https://j\noidc:\n  - id: Corp!\n    issuer: https://i\n    client_id: x\n", `id "Corp!"`},
		{"public_url: https://j\noidc:\n  - id: c\n    issuer: https://i\n    client_id: x\n    mapping: {grants: [{from: a, group: g, role: viewer, scripts: true}]}\n", "scripts needs role operator"},
		{"require_sso: true\n", "require_sso needs break_glass"},
		{"ldap:\n  url: ldap://ldap.example.com\n  user_base: o=x\n  group_base: o=x\n", "passwords in clear"},
		{"ldap:\n  url: ldaps://ldap.example.com\n  user_base: o=x\n", "group_base or member_of_attribute"},
	} {
		_, err := sso.LoadFile(write("bad.yaml", bad.text), lookup)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.text, err, bad.want)
		}
		if err != nil && strings.Contains(err.Error(), "from-a-file") {
			t.Errorf("an error shows a secret: %v", err)
		}
	}
}
