package sso

import (
	"errors"
	"fmt"
)

// Providers are the configured ways to sign in besides a password.
type Providers struct {
	cfg   *Config
	oidc  map[string]*OIDC
	order []*OIDC
	ldap  *LDAP
}

// New builds the providers of cfg (validated); nil cfg: none.
func New(cfg *Config) (*Providers, error) {
	if cfg == nil {
		cfg = &Config{}
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
	}
	ps := &Providers{cfg: cfg, oidc: map[string]*OIDC{}}
	for _, c := range cfg.OIDC {
		o, err := NewOIDC(c, cfg.ClockSkew)
		if err != nil {
			return nil, err
		}
		ps.oidc[c.ID] = o
		ps.order = append(ps.order, o)
	}
	if cfg.LDAP != nil {
		l, err := NewLDAP(*cfg.LDAP)
		if err != nil {
			return nil, err
		}
		ps.ldap = l
	}
	return ps, nil
}

// ErrUnknownProvider is an id no configured OpenID provider has.
var ErrUnknownProvider = errors.New("no such identity provider is configured")

// OIDC returns the OpenID provider id, or ErrUnknownProvider.
func (ps *Providers) OIDC(id string) (*OIDC, error) {
	if o, ok := ps.oidc[id]; ok {
		return o, nil
	}
	return nil, fmt.Errorf("%q: %w", id, ErrUnknownProvider)
}

// List is the OpenID providers in the configuration's order.
func (ps *Providers) List() []*OIDC { return ps.order }

// LDAP is the directory, nil when none is configured.
func (ps *Providers) LDAP() *LDAP { return ps.ldap }

// Config is the configuration the providers were built from.
func (ps *Providers) Config() *Config { return ps.cfg }

// PasswordAllowed reports whether user may sign in with a local
// password: always, unless RequireSSO, which leaves only BreakGlass.
func (ps *Providers) PasswordAllowed(user string) bool {
	return !ps.cfg.RequireSSO || user == ps.cfg.BreakGlass
}

// CallbackURL is the console's redirect URI for provider id: what is
// registered at the provider.
func (ps *Providers) CallbackURL(id string) string {
	return ps.cfg.PublicURL + "/login/sso/" + id + "/callback"
}
