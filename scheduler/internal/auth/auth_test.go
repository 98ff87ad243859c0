package auth

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPasswordHash(t *testing.T) {
	ctx := context.Background()
	h, err := HashPassword(ctx, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") || strings.Contains(h, "correct") {
		t.Fatalf("hash %q: want an argon2id PHC string with the documented parameters", h)
	}
	if err := CheckPassword(ctx, h, "correct horse battery"); err != nil {
		t.Errorf("right password: %v", err)
	}
	if err := CheckPassword(ctx, h, "correct horse batterx"); !errors.Is(err, ErrBadPassword) {
		t.Errorf("wrong password: %v, want ErrBadPassword", err)
	}
	h2, _ := HashPassword(ctx, "correct horse battery")
	if h2 == h {
		t.Error("two hashes of one password are equal: the salt is not random")
	}
	if err := CheckPassword(ctx, "$2a$10$bcrypt", "x"); err == nil || errors.Is(err, ErrBadPassword) {
		t.Errorf("foreign hash: %v, want a format error", err)
	}
	if CheckPasswordPolicy("short") == nil || CheckPasswordPolicy("long enough pw") != nil {
		t.Error("password policy: want 12 characters at least")
	}
}

func TestKeyFormat(t *testing.T) {
	tok, prefix, hash, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, "jj_"+prefix+"_") || len(prefix) != 8 {
		t.Fatalf("token %q, prefix %q", tok, prefix)
	}
	p, h, ok := ParseKey(tok)
	if !ok || p != prefix || !bytes.Equal(h, hash) {
		t.Fatalf("ParseKey(%q) = %q, %x, %t; want %q, %x", tok, p, h, ok, prefix, hash)
	}
	secret := strings.TrimPrefix(tok, "jj_"+prefix+"_")
	if bytes.Contains(hash, []byte(secret)) || len(hash) != 32 {
		t.Error("the stored form holds the secret")
	}
	for _, bad := range []string{"", "jj_", "jj_abc_def", "xx_" + tok[3:], tok[:len(tok)-1], "jj_ABCDEFGH_" + secret} {
		if _, _, ok := ParseKey(bad); ok {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}

func TestRuleCheck(t *testing.T) {
	req := httptest.NewRequest("GET", "/", nil)
	viewerA := &Principal{Name: "v", Grants: map[string]Grant{"a": {Role: Viewer}}}
	opA := &Principal{Name: "o", Grants: map[string]Grant{"a": {Role: Operator}}}
	scriptsA := &Principal{Name: "s", Grants: map[string]Grant{"a": {Role: Operator, Scripts: true}}}
	of := func(n ...Need) GroupOf { return func(*http.Request, *Principal) ([]Need, error) { return n, nil } }
	cases := []struct {
		rule Rule
		p    *Principal
		want string // "", "401", "404", "403"
	}{
		{Public(), nil, ""},
		{Authenticated(), nil, "401"},
		{Admin(), opA, "403"},
		{Admin(), Bootstrap(), ""},
		{ReadGroup(of(Need{Group: "a", Hidden: true})), viewerA, ""},
		{ReadGroup(of(Need{Group: "b", Hidden: true})), viewerA, "404"},
		{ReadGroup(of(Need{Group: "b"})), viewerA, "403"},
		{OperateGroup(of(Need{Group: "a", Hidden: true})), viewerA, "403"},
		{OperateGroup(of(Need{Group: "a"})), opA, ""},
		{OperateGroup(of(Need{Group: "a", Scripts: true, Why: "shell"})), opA, "403"},
		{OperateGroup(of(Need{Group: "a", Scripts: true})), scriptsA, ""},
		{OperateGroup(of(Need{Group: "a"}, Need{Group: "b"})), scriptsA, "403"},
		{ReadGroup(of()), viewerA, ""},
		{Rule{}, AnonymousAdmin(), "500"},
	}
	for i, c := range cases {
		err := c.rule.Check(req, c.p)
		var f *Forbidden
		got := "500"
		switch {
		case err == nil:
			got = ""
		case errors.Is(err, ErrUnauthenticated):
			got = "401"
		case errors.Is(err, ErrHidden):
			got = "404"
		case errors.As(err, &f):
			got = "403"
		}
		if got != c.want {
			t.Errorf("case %d (%s, %v): %q (%v), want %q", i, c.rule, c.p, got, err, c.want)
		}
	}
}

// The hash checked for a user without a password is under the current
// parameters (a check of it costs what a real one costs) and matches no
// password a user could give.
func TestNoPasswordHash(t *testing.T) {
	h := NoPasswordHash()
	real, err := HashPassword(context.Background(), "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if params := strings.Join(strings.Split(h, "$")[:4], "$"); !strings.HasPrefix(real, params+"$") {
		t.Errorf("NoPasswordHash %q: parameters differ from HashPassword's %q", h, real)
	}
	if err := CheckPassword(context.Background(), h, ""); !errors.Is(err, ErrBadPassword) {
		t.Errorf("the empty password against NoPasswordHash: %v, want ErrBadPassword", err)
	}
}
