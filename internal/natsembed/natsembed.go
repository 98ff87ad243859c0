// Package natsembed runs a NATS server with JetStream inside the current
// process, for `jetjob-scheduler dev` and for tests. Production deployments
// run nats-server on its own (see deploy/).
package natsembed

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options configures the embedded server.
type Options struct {
	// StoreDir holds JetStream's files. Restarting a server on the same
	// directory keeps the streams and their messages.
	StoreDir string
	// Host defaults to 127.0.0.1.
	Host string
	// Port defaults to a random free port (-1). Fix it to restart a server
	// at the address its clients reconnect to.
	Port int
	// Logs enables the server's own log output on stderr.
	Logs bool
	// TLS, when set, makes the server require TLS with this configuration
	// (and verify client certificates when its ClientAuth says so), so that
	// tests can check that clients reach a secured NATS.
	TLS *tls.Config
	// User and Password, when set, are the only credentials accepted.
	User, Password string
	// ConfigFile, when set, is a nats-server configuration file read
	// first, for what Options has no field for: users with permissions (an
	// authorization block, such as deploy/natsperm writes), accounts. The
	// fields above still decide the address, JetStream's store, logging
	// and TLS, so a test gets a server it controls with the very
	// configuration an operator ships.
	ConfigFile string
	// Name is the server's name (default "jetjob-embedded"); each node of
	// a cluster needs its own.
	Name string
	// Cluster, when set, makes the server a node of a JetStream cluster
	// (see ClusterOptions).
	Cluster *ClusterOptions
	// MonitorPort, when not 0, serves the HTTP monitoring endpoints
	// (/varz, /jsz, ...) on Host: -1 picks a free port (MonitorURL says
	// which).
	MonitorPort int
}

// ClusterOptions makes an embedded server a node of a cluster: the
// benchmark's three-node cluster on one machine (replicated streams),
// never a production deployment.
type ClusterOptions struct {
	// Name is the cluster's name, the same on every node.
	Name string
	// Port is this node's route port on Host.
	Port int
	// Routes are the nats-route://host:port URLs of the nodes (this one's
	// may be among them).
	Routes []string
}

// RoutePorts picks n distinct ports free on 127.0.0.1 for the route
// listeners of a cluster's nodes (each node's Routes must name the others
// before any starts): all n are held at once while they are picked, so
// none repeats; another process may still take one before its node binds
// it, and that node's Start then fails.
func RoutePorts(n int) ([]int, error) {
	var ports []int
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("natsembed: route port: %w", err)
		}
		held = append(held, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Server is a running embedded NATS server.
type Server struct {
	srv  *server.Server
	opts Options
}

// Start starts a server and waits until it accepts connections.
func Start(o Options) (*Server, error) {
	if o.StoreDir == "" {
		return nil, errors.New("natsembed: StoreDir is required")
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	if o.Port == 0 {
		o.Port = -1
	}
	opts := &server.Options{}
	if o.ConfigFile != "" {
		var err error
		if opts, err = server.ProcessConfigFile(o.ConfigFile); err != nil {
			return nil, fmt.Errorf("natsembed: %w", err)
		}
		if o.User != "" && (len(opts.Users) > 0 || len(opts.Nkeys) > 0) {
			return nil, errors.New("natsembed: User and a config file's users exclude each other")
		}
	}
	opts.ServerName = "jetjob-embedded"
	if o.Name != "" {
		opts.ServerName = o.Name
	}
	if c := o.Cluster; c != nil {
		if c.Name == "" || c.Port <= 0 || o.Name == "" {
			return nil, errors.New("natsembed: a cluster node needs Name, Cluster.Name and Cluster.Port")
		}
		opts.Cluster.Name, opts.Cluster.Host, opts.Cluster.Port = c.Name, o.Host, c.Port
		for _, r := range c.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("natsembed: route %q: %w", r, err)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	if o.MonitorPort != 0 {
		opts.HTTPHost, opts.HTTPPort = o.Host, o.MonitorPort
	}
	opts.Host, opts.Port = o.Host, o.Port
	opts.JetStream, opts.StoreDir = true, o.StoreDir
	opts.NoSigs, opts.NoLog = true, !o.Logs
	if opts.MaxPayload == 0 { // a config file's own limit stands
		opts.MaxPayload = 8 << 20
	}
	if o.User != "" {
		opts.Username, opts.Password = o.User, o.Password
	}
	if o.TLS != nil {
		opts.TLS, opts.TLSConfig = true, o.TLS
		opts.TLSVerify = o.TLS.ClientAuth == tls.RequireAndVerifyClientCert
		opts.TLSTimeout = 5
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsembed: %w", err)
	}
	if o.Logs {
		srv.ConfigureLogger()
	}
	go srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("natsembed: server not ready within 30s")
	}
	return &Server{srv: srv, opts: o}, nil
}

// ClientURL is the nats:// URL clients connect to.
func (s *Server) ClientURL() string { return s.srv.ClientURL() }

// Port is the port the server listens on (useful to restart on it).
func (s *Server) Port() int { return s.srv.Addr().(*net.TCPAddr).Port }

// MonitorURL is the http:// URL of the monitoring endpoints, "" without
// Options.MonitorPort.
func (s *Server) MonitorURL() string {
	a := s.srv.MonitorAddr()
	if a == nil {
		return ""
	}
	return "http://" + a.String()
}

// JetStreamReady reports whether JetStream can serve requests: always on a
// single server; on a cluster node, once the cluster has a meta leader and
// this node has caught up with it.
func (s *Server) JetStreamReady() bool {
	if s.opts.Cluster == nil {
		return s.srv.JetStreamEnabled()
	}
	return s.srv.JetStreamIsCurrent()
}

// Shutdown stops the server and waits until it has stopped.
func (s *Server) Shutdown() {
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
}
