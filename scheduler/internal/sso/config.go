// Package sso signs users in through the company's identity provider:
// OpenID Connect providers (authorization code with PKCE, state and nonce,
// discovery and JWKS through go-oidc; the device grant for the CLI) and an
// LDAP directory (a service bind finds the user, a bind as the user checks
// the password, a search finds their groups). Either way the answer is an
// Identity with the provider's groups, and a Mapping turns those groups
// into jetjob's admin flag and per-group grants at every sign-in.
//
// It holds no SQL and no HTTP handlers: package api keeps the sign-ins
// under way, the federated users and the audit rows in package store, and
// answers the browser and the CLI.
package sso

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/jetjob/jetjob/scheduler/internal/auth"
)

// Config is the sign-in configuration: the file --sso-config names.
// Secrets are not in it: each comes from a file it names or from the
// environment (ClientSecret, BindPassword are filled by Load).
type Config struct {
	// PublicURL is the scheduler's address as browsers reach it
	// (https://jetjob.example.com): the redirect URI registered at each
	// provider is PublicURL + "/login/sso/<id>/callback".
	PublicURL string `yaml:"public_url"`
	// RequireSSO refuses password sign-in to every user but BreakGlass.
	RequireSSO bool   `yaml:"require_sso"`
	BreakGlass string `yaml:"break_glass"`
	// ClockSkew is how far a provider's clock may be ahead of ours when an
	// ID token's expiry is checked (default 1m).
	ClockSkew time.Duration `yaml:"clock_skew"`
	// PendingTTL is how long a sign-in may take at the provider (default 10m).
	PendingTTL time.Duration `yaml:"pending_ttl"`
	OIDC       []OIDCConfig  `yaml:"oidc"`
	LDAP       *LDAPConfig   `yaml:"ldap"`
}

// OIDCConfig is one OpenID provider.
type OIDCConfig struct {
	// ID names the provider in URLs, the audit log and the CLI
	// (jetjob login --sso ID): lower-case letters, digits and dashes.
	ID string `yaml:"id"`
	// Name is the button's: "Sign in with <Name>".
	Name string `yaml:"name"`
	// Issuer is the provider's issuer URL; discovery reads
	// Issuer + "/.well-known/openid-configuration".
	Issuer   string `yaml:"issuer"`
	ClientID string `yaml:"client_id"`
	// ClientSecretFile holds the client secret; else the environment's
	// JETJOB_SSO_<ID>_CLIENT_SECRET (ID upper-cased, dashes as
	// underscores); neither: a public client (PKCE alone).
	ClientSecretFile string `yaml:"client_secret_file"`
	ClientSecret     string `yaml:"-"`
	// Scopes are asked besides openid, profile and email (e.g. groups).
	Scopes []string `yaml:"scopes"`
	// GroupsClaim is the ID token's claim listing the user's groups
	// (default "groups").
	GroupsClaim string `yaml:"groups_claim"`
	// UsernameClaim names the jetjob user a first sign-in creates
	// (default "preferred_username"; "email" for providers without it).
	UsernameClaim string `yaml:"username_claim"`
	// CAFile is a PEM CA bundle for a provider whose certificate the
	// system does not trust.
	CAFile  string  `yaml:"ca_file"`
	Mapping Mapping `yaml:"mapping"`
}

// Mapping turns a provider's groups into jetjob's admin flag and grants.
type Mapping struct {
	// AdminGroups: a member of any is a jetjob admin.
	AdminGroups []string `yaml:"admin_groups"`
	// Grants: a member of From gets Role (viewer or operator, Scripts
	// with operator) on jetjob group Group.
	Grants []GrantRule `yaml:"grants"`
}

// GrantRule is one line of a Mapping.
type GrantRule struct {
	From    string `yaml:"from"`
	Group   string `yaml:"group"`
	Role    string `yaml:"role"`
	Scripts bool   `yaml:"scripts"`
}

// Defaults.
const (
	DefaultGroupsClaim   = "groups"
	DefaultUsernameClaim = "preferred_username"
	DefaultClockSkew     = time.Minute
	DefaultPendingTTL    = 10 * time.Minute
)

var validID = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// LoadFile reads the YAML file at path strictly (an unknown key is an
// error) and the secrets it names from files or env, then validates.
func LoadFile(path string, env func(string) (string, bool)) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sso config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("sso config %s: %w", path, err)
	}
	if err := c.LoadSecrets(env); err != nil {
		return nil, fmt.Errorf("sso config %s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("sso config %s: %w", path, err)
	}
	return &c, nil
}

// SecretEnv is the variable a provider's client secret may come from.
func SecretEnv(id string) string {
	return "JETJOB_SSO_" + strings.ToUpper(strings.ReplaceAll(id, "-", "_")) + "_CLIENT_SECRET"
}

// LDAPPasswordEnv holds the LDAP service bind's password unless
// bind_password_file names a file.
const LDAPPasswordEnv = "JETJOB_SSO_LDAP_BIND_PASSWORD"

// LoadSecrets fills the secrets from the files named, else env.
func (c *Config) LoadSecrets(env func(string) (string, bool)) error {
	var errs []error
	for i := range c.OIDC {
		p := &c.OIDC[i]
		v, err := secret(p.ClientSecretFile, SecretEnv(p.ID), env)
		if err != nil {
			errs = append(errs, fmt.Errorf("oidc %s: client secret: %w", p.ID, err))
		}
		p.ClientSecret = v
	}
	if c.LDAP != nil {
		v, err := secret(c.LDAP.BindPasswordFile, LDAPPasswordEnv, env)
		if err != nil {
			errs = append(errs, fmt.Errorf("ldap: bind password: %w", err))
		}
		c.LDAP.BindPassword = v
	}
	return errors.Join(errs...)
}

func secret(file, name string, env func(string) (string, bool)) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return "", err // names the file, never its content
		}
		return strings.TrimSpace(string(b)), nil
	}
	v, _ := env(name)
	return strings.TrimSpace(v), nil
}

// Validate fills defaults and says which fields are wrong.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.ClockSkew == 0 {
		c.ClockSkew = DefaultClockSkew
	}
	if c.ClockSkew < 0 || c.ClockSkew > 10*time.Minute {
		bad("clock_skew %s: want 0s to 10m", c.ClockSkew)
	}
	if c.PendingTTL == 0 {
		c.PendingTTL = DefaultPendingTTL
	}
	if c.PendingTTL < time.Minute || c.PendingTTL > time.Hour {
		bad("pending_ttl %s: want 1m to 1h", c.PendingTTL)
	}
	if len(c.OIDC) > 0 {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("public_url %q: want the scheduler's address as browsers reach it, e.g. https://jetjob.example.com", c.PublicURL)
		}
		c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	}
	if c.RequireSSO && c.BreakGlass == "" {
		bad("require_sso needs break_glass: the local admin who may still sign in with a password")
	}
	seen := map[string]bool{}
	for i := range c.OIDC {
		p := &c.OIDC[i]
		if !validID.MatchString(p.ID) {
			bad("oidc[%d].id %q: want lower-case letters, digits and dashes (at most 32)", i, p.ID)
		}
		if seen[p.ID] {
			bad("oidc[%d].id %q: given twice", i, p.ID)
		}
		seen[p.ID] = true
		if p.Name == "" {
			p.Name = p.ID
		}
		if u, err := url.Parse(p.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("oidc %s: issuer %q: want the provider's issuer URL", p.ID, p.Issuer)
		}
		if p.ClientID == "" {
			bad("oidc %s: client_id is required", p.ID)
		}
		if p.GroupsClaim == "" {
			p.GroupsClaim = DefaultGroupsClaim
		}
		if p.UsernameClaim == "" {
			p.UsernameClaim = DefaultUsernameClaim
		}
		if err := p.Mapping.validate(); err != nil {
			bad("oidc %s: mapping: %w", p.ID, err)
		}
	}
	if c.LDAP != nil {
		if seen[LDAPProvider] {
			bad("oidc id %q is the LDAP directory's", LDAPProvider)
		}
		if err := c.LDAP.validate(); err != nil {
			bad("ldap: %w", err)
		}
	}
	return errors.Join(errs...)
}

func (m Mapping) validate() error {
	var errs []error
	for i, g := range m.Grants {
		if g.From == "" || g.Group == "" {
			errs = append(errs, fmt.Errorf("grants[%d]: from and group are required", i))
		}
		role, err := auth.ParseRole(g.Role)
		if err != nil {
			errs = append(errs, fmt.Errorf("grants[%d]: %w", i, err))
		}
		if g.Scripts && role != auth.Operator {
			errs = append(errs, fmt.Errorf("grants[%d]: scripts needs role operator", i))
		}
	}
	return errors.Join(errs...)
}
