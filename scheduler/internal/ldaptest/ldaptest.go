// Package ldaptest runs a throwaway OpenLDAP server (Debian's slapd) for
// tests that sign users in against a real directory: its own temporary
// configuration (slapd -f), a small directory loaded with slapadd before
// it starts, LDAPS and StartTLS with a test CA (internal/testpki), on free
// ports of 127.0.0.1, as the current user. `make ensure-slapd`
// (deploy/ensure-slapd.sh) installs the binaries when they are missing. It
// is for tests only.
package ldaptest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/jetjob/jetjob/internal/testpki"
	"github.com/jetjob/jetjob/internal/testtier"
)

// EnvBin names a directory holding slapd and slapadd; it wins over the
// usual places.
const EnvBin = "JETJOB_SLAPD_BIN"

// Base is the directory's suffix; people, groups and the service account
// live under it.
const (
	Base         = "dc=example,dc=test"
	UserBase     = "ou=people," + Base
	GroupBase    = "ou=groups," + Base
	ServiceDN    = "cn=jetjob,ou=services," + Base
	ServicePass  = "service-account-password"
	rootDN       = "cn=admin," + Base
	rootPassword = "root-password-of-the-test-directory"
)

// User is a person of the directory (uid=UID,ou=people,…).
type User struct {
	UID, Name, Password string
}

// Group is a groupOfNames (cn=Name,ou=groups,…) of users, by uid.
type Group struct {
	Name    string
	Members []string
}

// Server is a running slapd.
type Server struct {
	// URL is the LDAPS address, StartTLSURL the plain one (for StartTLS).
	URL, StartTLSURL string
	// CAFile is the PEM CA the server's certificate is signed by.
	CAFile string
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// Binaries are slapd and slapadd.
type Binaries struct{ Server, Add string }

// FindBinaries looks where deploy/ensure-slapd.sh looks, in the same
// order: $JETJOB_SLAPD_BIN, /usr/sbin and /usr/bin, then PATH.
func FindBinaries() (Binaries, error) {
	if dir := os.Getenv(EnvBin); dir != "" {
		return Binaries{Server: filepath.Join(dir, "slapd"), Add: filepath.Join(dir, "slapadd")}, nil
	}
	find := func(name string) string {
		for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
			if p := filepath.Join(dir, name); isExec(p) {
				return p
			}
		}
		p, _ := exec.LookPath(name)
		return p
	}
	b := Binaries{Server: find("slapd"), Add: find("slapadd")}
	if b.Server == "" || b.Add == "" {
		return b, errors.New("ldaptest: slapd and slapadd not found: run `make ensure-slapd` or `apt-get install -y slapd ldap-utils`, or set " + EnvBin)
	}
	return b, nil
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// StartTest starts a directory of users and groups for t, stopped when t
// ends. It skips t in the short tier and where the machine has no slapd
// (unless make runs the tests: package testtier).
func StartTest(t testing.TB, users []User, groups []Group) *Server {
	t.Helper()
	testtier.Needs(t, testtier.Slapd)
	bin, err := FindBinaries()
	if err != nil {
		testtier.Missing(t, "OpenLDAP's slapd", err, "make ensure-slapd (or make test)")
	}
	dir := t.TempDir()
	pki, err := testpki.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "slapd.conf")
	if err := os.WriteFile(conf, []byte(config(dir, pki)), 0o600); err != nil {
		t.Fatal(err)
	}
	ldif := filepath.Join(dir, "directory.ldif")
	if err := os.WriteFile(ldif, []byte(directory(users, groups)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin.Add, "-f", conf, "-l", ldif).CombinedOutput(); err != nil {
		t.Fatalf("ldaptest: slapadd: %v: %s", err, out)
	}
	s := &Server{CAFile: pki.CAFile, dir: dir, exited: make(chan struct{})}
	ldaps, plain := freePort(t), freePort(t)
	s.URL, s.StartTLSURL = fmt.Sprintf("ldaps://127.0.0.1:%d", ldaps), fmt.Sprintf("ldap://127.0.0.1:%d", plain)
	// -d 0: stay in the foreground (and log nothing), so that the test
	// owns the process.
	s.cmd = exec.Command(bin.Server, "-f", conf, "-h", s.URL+"/ "+s.StartTLSURL+"/", "-d", "0")
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var log strings.Builder
	s.cmd.Stdout, s.cmd.Stderr = &log, &log
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("ldaptest: start slapd: %v", err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
	if err := s.waitReady(); err != nil {
		t.Fatalf("ldaptest: %v; slapd said: %s", err, log.String())
	}
	return s
}

// waitReady binds as the root DN until it works, slapd exits, or a
// generous deadline passes.
func (s *Server) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := s.root()
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("slapd exited before answering (last error: %v)", err)
		case <-ctx.Done():
			return fmt.Errorf("slapd not answering at %s: %v", s.URL, err)
		case <-tick.C:
		}
	}
}

// TLS is a client configuration that trusts the server.
func (s *Server) TLS() *tls.Config {
	pem, _ := os.ReadFile(s.CAFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

func (s *Server) root() (*ldap.Conn, error) {
	c, err := ldap.DialURL(s.URL, ldap.DialWithTLSConfig(s.TLS()))
	if err != nil {
		return nil, err
	}
	if err := c.Bind(rootDN, rootPassword); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// SetMembers replaces a group's members (uids): the directory changing
// between two sign-ins.
func (s *Server) SetMembers(t testing.TB, group string, uids []string) {
	t.Helper()
	c, err := s.root()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := ldap.NewModifyRequest("cn="+group+","+GroupBase, nil)
	m.Replace("member", memberDNs(uids))
	if err := c.Modify(m); err != nil {
		t.Fatalf("ldaptest: set members of %s: %v", group, err)
	}
}

func memberDNs(uids []string) []string {
	out := []string{ServiceDN} // groupOfNames needs a member
	for _, u := range uids {
		out = append(out, "uid="+u+","+UserBase)
	}
	return out
}

// config is slapd.conf: the usual schemas, one mdb database, TLS, and
// access rules like a company's: passwords only for binding, entries only
// for bound users (the service account searches).
func config(dir string, pki *testpki.PKI) string {
	return fmt.Sprintf(`include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
pidfile %[1]s/slapd.pid
argsfile %[1]s/slapd.args
modulepath /usr/lib/ldap
moduleload back_mdb
TLSCACertificateFile %[2]s
TLSCertificateFile %[3]s
TLSCertificateKeyFile %[4]s
database mdb
maxsize 16777216
suffix "%[5]s"
rootdn "%[6]s"
rootpw %[7]s
directory %[1]s/data
access to attrs=userPassword by anonymous auth by self write by * none
access to * by users read by * none
`, dir, pki.CAFile, pki.ServerCert, pki.ServerKey, Base, rootDN, rootPassword)
}

// directory is the LDIF slapadd loads.
func directory(users []User, groups []Group) string {
	var b strings.Builder
	entry := func(lines ...string) { b.WriteString(strings.Join(lines, "\n") + "\n\n") }
	entry("dn: "+Base, "objectClass: dcObject", "objectClass: organization", "dc: example", "o: Example")
	for _, ou := range []string{"people", "groups", "services"} {
		entry("dn: ou="+ou+","+Base, "objectClass: organizationalUnit", "ou: "+ou)
	}
	entry("dn: "+ServiceDN, "objectClass: organizationalRole", "objectClass: simpleSecurityObject", "cn: jetjob", "userPassword: "+ServicePass)
	for _, u := range users {
		entry("dn: uid="+u.UID+","+UserBase, "objectClass: inetOrgPerson", "uid: "+u.UID, "cn: "+u.Name,
			"sn: "+u.Name, "userPassword: "+u.Password)
	}
	for _, g := range groups {
		lines := []string{"dn: cn=" + g.Name + "," + GroupBase, "objectClass: groupOfNames", "cn: " + g.Name}
		for _, m := range memberDNs(g.Members) {
			lines = append(lines, "member: "+m)
		}
		entry(lines...)
	}
	return b.String()
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
