package sso

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/go-ldap/ldap/v3"
)

// LDAPProvider is the LDAP directory's provider id (audit rows, users'
// provider, the sign-in form's choice).
const LDAPProvider = "ldap"

// LDAPConfig is the directory users may sign in against with the same
// form as local users.
type LDAPConfig struct {
	// Name is the form's label for the directory ("Corporate directory").
	Name string `yaml:"name"`
	// URL is ldaps://host:636, or ldap://host:389 with StartTLS; a plain
	// connection is refused (passwords would cross the network in clear).
	URL      string `yaml:"url"`
	StartTLS bool   `yaml:"start_tls"`
	// CAFile is a PEM CA bundle for a server the system does not trust.
	CAFile string `yaml:"ca_file"`
	// BindDN and the password (bind_password_file, else the environment's
	// JETJOB_SSO_LDAP_BIND_PASSWORD) are the service account that finds
	// users and their groups; empty: anonymous searches.
	BindDN           string `yaml:"bind_dn"`
	BindPasswordFile string `yaml:"bind_password_file"`
	BindPassword     string `yaml:"-"`
	// UserBase and UserFilter find the user: {username} in the filter is
	// replaced by the name typed, escaped (default "(uid={username})";
	// Active Directory: "(sAMAccountName={username})").
	UserBase   string `yaml:"user_base"`
	UserFilter string `yaml:"user_filter"`
	// NameAttribute and DisplayNameAttribute of the user's entry (default
	// uid and cn; Active Directory: sAMAccountName and displayName).
	NameAttribute        string `yaml:"name_attribute"`
	DisplayNameAttribute string `yaml:"display_name_attribute"`
	// MemberOfAttribute lists the user's groups on their own entry
	// (memberOf in Active Directory and with OpenLDAP's memberof overlay):
	// each value's first RDN value (the CN) is a group name.
	MemberOfAttribute string `yaml:"member_of_attribute"`
	// GroupBase and GroupFilter search groups naming the user ({dn} is
	// the user's DN, escaped; default "(|(member={dn})(uniqueMember={dn}))");
	// GroupNameAttribute is a group's name (default cn).
	GroupBase          string        `yaml:"group_base"`
	GroupFilter        string        `yaml:"group_filter"`
	GroupNameAttribute string        `yaml:"group_name_attribute"`
	Timeout            time.Duration `yaml:"timeout"`
	Mapping            Mapping       `yaml:"mapping"`
}

func (c *LDAPConfig) validate() error {
	var errs []error
	u, err := url.Parse(c.URL)
	switch {
	case err != nil || u.Host == "":
		errs = append(errs, fmt.Errorf("url %q: want ldaps://host:636 or ldap://host:389 with start_tls", c.URL))
	case u.Scheme == "ldap" && !c.StartTLS:
		errs = append(errs, fmt.Errorf("url %q: a plain ldap:// connection would send passwords in clear: use ldaps:// or start_tls: true", c.URL))
	case u.Scheme != "ldap" && u.Scheme != "ldaps":
		errs = append(errs, fmt.Errorf("url %q: want ldaps:// or ldap://", c.URL))
	case u.Scheme == "ldaps" && c.StartTLS:
		errs = append(errs, errors.New("start_tls is for ldap:// URLs; ldaps:// is TLS already"))
	}
	if c.UserBase == "" {
		errs = append(errs, errors.New("user_base is required"))
	}
	if c.Name == "" {
		c.Name = "LDAP"
	}
	if c.UserFilter == "" {
		c.UserFilter = "(uid={username})"
	}
	if !strings.Contains(c.UserFilter, "{username}") {
		errs = append(errs, fmt.Errorf("user_filter %q: must contain {username}", c.UserFilter))
	}
	if c.NameAttribute == "" {
		c.NameAttribute = "uid"
	}
	if c.DisplayNameAttribute == "" {
		c.DisplayNameAttribute = "cn"
	}
	if c.GroupFilter == "" {
		c.GroupFilter = "(|(member={dn})(uniqueMember={dn}))"
	}
	if c.GroupNameAttribute == "" {
		c.GroupNameAttribute = "cn"
	}
	if c.GroupBase == "" && c.MemberOfAttribute == "" {
		errs = append(errs, errors.New("group_base or member_of_attribute is required: groups are what grants are mapped from"))
	}
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	if err := c.Mapping.validate(); err != nil {
		errs = append(errs, fmt.Errorf("mapping: %w", err))
	}
	return errors.Join(errs...)
}

// LDAP signs users in against a directory.
type LDAP struct {
	cfg LDAPConfig
	tls *tls.Config
}

// NewLDAP returns the directory of cfg (validated).
func NewLDAP(cfg LDAPConfig) (*LDAP, error) {
	u, _ := url.Parse(cfg.URL)
	tc := &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ldap: ca_file: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ldap: ca_file %s holds no PEM certificate", cfg.CAFile)
		}
	}
	return &LDAP{cfg: cfg, tls: tc}, nil
}

// Name is the form's label; Mapping the directory's group mapping.
func (l *LDAP) Name() string     { return l.cfg.Name }
func (l *LDAP) Mapping() Mapping { return l.cfg.Mapping }

// ldapName is what a name typed on the form may be: a jetjob user name.
// Anything else (an LDAP filter's * ( ) \ among them) is refused before
// the directory is asked, and the filter escapes it anyway.
var ldapName = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,64}$`)

// ErrWrongPassword is the one answer for an unknown name, a wrong
// password and an empty one, so that they cannot be told apart.
var ErrWrongPassword = errors.New("wrong user name or password")

// UserFilter is the search filter for name: the configured filter with
// {username} replaced by name escaped (RFC 4515).
func (l *LDAP) UserFilter(name string) string {
	return strings.ReplaceAll(l.cfg.UserFilter, "{username}", ldap.EscapeFilter(name))
}

// Authenticate checks name and password: a service bind searches the
// user's entry, a bind as its DN checks the password, and the user's
// groups are read from the entry (memberOf) and/or searched. It answers
// the identity, ErrWrongPassword, a *Refused (a name no jetjob user may
// have), or an error reaching the directory.
func (l *LDAP) Authenticate(name, password string) (Identity, error) {
	if !ldapName.MatchString(name) {
		return Identity{}, refused(LDAPProvider, "the user name may hold only letters, digits and _ . @ - (at most 64): "+
			"characters such as * ( ) \\ are refused, they would change the directory search")
	}
	if password == "" {
		// An empty password is an unauthenticated bind, which many
		// servers accept as a success.
		return Identity{}, ErrWrongPassword
	}
	conn, err := l.dial()
	if err != nil {
		return Identity{}, err
	}
	defer conn.Close()
	if err := l.serviceBind(conn); err != nil {
		return Identity{}, err
	}
	attrs := []string{l.cfg.NameAttribute, l.cfg.DisplayNameAttribute}
	if l.cfg.MemberOfAttribute != "" {
		attrs = append(attrs, l.cfg.MemberOfAttribute)
	}
	res, err := conn.Search(ldap.NewSearchRequest(l.cfg.UserBase, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 2,
		int(l.cfg.Timeout.Seconds()), false, l.UserFilter(name), attrs, nil))
	if err != nil && !ldap.IsErrorWithCode(err, ldap.LDAPResultSizeLimitExceeded) {
		return Identity{}, fmt.Errorf("ldap: search user: %w", err)
	}
	if res == nil || len(res.Entries) == 0 {
		return Identity{}, ErrWrongPassword
	}
	if len(res.Entries) > 1 {
		return Identity{}, refused(LDAPProvider, "the directory has several entries for this user name")
	}
	e := res.Entries[0]
	if err := conn.Bind(e.DN, password); err != nil {
		if ldap.IsErrorWithCode(err, ldap.LDAPResultInvalidCredentials) {
			return Identity{}, ErrWrongPassword
		}
		return Identity{}, fmt.Errorf("ldap: bind as the user: %w", err)
	}
	id := Identity{Provider: LDAPProvider, Subject: e.DN, Name: e.GetAttributeValue(l.cfg.NameAttribute),
		DisplayName: e.GetAttributeValue(l.cfg.DisplayNameAttribute)}
	if !ldapName.MatchString(id.Name) {
		id.Name = name
	}
	for _, dn := range e.GetAttributeValues(l.cfg.MemberOfAttribute) {
		if g := firstRDN(dn); g != "" {
			id.Groups = append(id.Groups, g)
		}
	}
	if l.cfg.GroupBase != "" {
		// Back to the service account: a user may not read the groups.
		if err := l.serviceBind(conn); err != nil {
			return Identity{}, err
		}
		filter := strings.ReplaceAll(l.cfg.GroupFilter, "{dn}", ldap.EscapeFilter(e.DN))
		gr, err := conn.Search(ldap.NewSearchRequest(l.cfg.GroupBase, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 0,
			int(l.cfg.Timeout.Seconds()), false, filter, []string{l.cfg.GroupNameAttribute}, nil))
		if err != nil {
			return Identity{}, fmt.Errorf("ldap: search groups: %w", err)
		}
		for _, g := range gr.Entries {
			if n := g.GetAttributeValue(l.cfg.GroupNameAttribute); n != "" {
				id.Groups = append(id.Groups, n)
			}
		}
	}
	return id, nil
}

func (l *LDAP) dial() (*ldap.Conn, error) {
	conn, err := ldap.DialURL(l.cfg.URL, ldap.DialWithTLSConfig(l.tls), ldap.DialWithDialer(&net.Dialer{Timeout: l.cfg.Timeout}))
	if err != nil {
		return nil, fmt.Errorf("ldap: connect to %s: %w", l.cfg.URL, err)
	}
	conn.SetTimeout(l.cfg.Timeout)
	if l.cfg.StartTLS {
		if err := conn.StartTLS(l.tls); err != nil {
			conn.Close()
			return nil, fmt.Errorf("ldap: StartTLS with %s: %w", l.cfg.URL, err)
		}
	}
	return conn, nil
}

func (l *LDAP) serviceBind(conn *ldap.Conn) error {
	if l.cfg.BindDN == "" {
		return nil
	}
	if err := conn.Bind(l.cfg.BindDN, l.cfg.BindPassword); err != nil {
		return fmt.Errorf("ldap: service bind as %s: %w", l.cfg.BindDN, err)
	}
	return nil
}

// firstRDN is the value of a DN's first attribute ("ops" of
// "cn=ops,ou=groups,dc=example,dc=com"), "" when it does not parse.
func firstRDN(dn string) string {
	d, err := ldap.ParseDN(dn)
	if err != nil || len(d.RDNs) == 0 || len(d.RDNs[0].Attributes) == 0 {
		return ""
	}
	return d.RDNs[0].Attributes[0].Value
}
