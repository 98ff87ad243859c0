package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/natsembed"
	"github.com/jetjob/jetjob/internal/stream"
)

// natsNode is one NATS server of the benchmark: a child process, its
// client port (kept across a restart), its route port (clusters) and its
// monitoring URL.
type natsNode struct {
	c           *child
	port        int
	clusterPort int
	monitor     string
}

// natsRole is node i's role: "nats" for a single server, "nats-<i>" in
// a cluster (cpu_per_run counts them all as kind nats).
func (e *env) natsRole(i int) string {
	if e.o.natsCluster == 1 {
		return "nats"
	}
	return fmt.Sprintf("nats-%d", i)
}

// startNATS starts the NATS server, or the --nats-cluster nodes with
// routes to each other on 127.0.0.1, each with JetStream file storage in
// its own directory and monitoring on a free port; a cluster is ready once
// every node says it is healthy (a meta leader, caught up). A restart
// binds the same ports and directories again.
func (e *env) startNATS(ctx context.Context) error {
	n := e.o.natsCluster
	if e.natsNodes == nil {
		var ports []int
		if n > 1 {
			var err error
			if ports, err = natsembed.RoutePorts(n); err != nil {
				return err
			}
		}
		for i := range n {
			node := &natsNode{}
			if n > 1 {
				node.clusterPort = ports[i]
			}
			e.natsNodes = append(e.natsNodes, node)
		}
	}
	var routes []string
	for _, node := range e.natsNodes {
		if node.clusterPort > 0 {
			routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", node.clusterPort))
		}
	}
	var urls []string
	for i, node := range e.natsNodes {
		role := e.natsRole(i)
		dir := filepath.Join(e.tmp, role)
		args := []string{"--dir", dir, "--port", strconv.Itoa(node.port), "--monitor-port", "-1"}
		if n > 1 {
			args = append(args, "--name", role, "--cluster-port", strconv.Itoa(node.clusterPort),
				"--routes", strings.Join(routes, ","))
		}
		if e.o.profile {
			p := e.file(e.o.out, e.name+"-"+role, ".pprof")
			e.profilePaths = append(e.profilePaths, p)
			args = append(args, "--cpuprofile", p, "--cpuprofile-signal")
		}
		c, err := startChild(role, e.file(e.logDir, role, ".log"), 60*time.Second, "nats", args...)
		if err != nil {
			return fmt.Errorf("start %s: %w", role, err)
		}
		node.c = c
		f := strings.Fields(c.info) // client URL, server version, monitoring URL
		if len(f) != 3 {
			return fmt.Errorf("%s: unexpected READY line %q", role, c.info)
		}
		u, err := url.Parse(f[0])
		if err != nil {
			return fmt.Errorf("%s: client URL %q: %w", role, f[0], err)
		}
		if node.port, err = strconv.Atoi(u.Port()); err != nil {
			return fmt.Errorf("%s: client URL %q has no port", role, f[0])
		}
		urls = append(urls, f[0])
		e.natsVer, node.monitor = f[1], f[2]
	}
	e.natsURL = strings.Join(urls, ",")
	if err := e.waitNATSHealthy(ctx, 90*time.Second); err != nil {
		return err
	}
	if err := e.provision(ctx, 90*time.Second); err != nil {
		return err
	}
	what := "one server"
	if n > 1 {
		what = fmt.Sprintf("a cluster of %d, streams R%d", n, e.o.replicas)
	}
	logf("nats ready at %s (nats-server %s, %s)", e.natsURL, e.natsVer, what)
	return nil
}

// waitNATSHealthy waits until every node's /healthz answers 200: JetStream
// enabled and, in a cluster, current with the meta leader.
func (e *env) waitNATSHealthy(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for i, node := range e.natsNodes {
		err := backoff.Retry(ctx, backoff.Policy{}, func(ctx context.Context) error {
			_, err := fetchMetrics(ctx, node.monitor+"/healthz")
			return err
		})
		if err != nil {
			return fmt.Errorf("%s not healthy within %s: %w", e.natsRole(i), timeout, err)
		}
	}
	return nil
}

// provision creates the streams and buckets at --stream-replicas before
// any worker or scheduler starts, retrying each JetStream request that
// times out (an R3 stream's creation on a busy host can take longer than
// a request's 5 s): the workers, started first, then find them and a
// worker's own provisioning, which does not retry, has nothing to create.
func (e *env) provision(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nc, err := nats.Connect(e.natsURL, nats.Name("jetjob-bench provision"))
	if err != nil {
		return fmt.Errorf("nats: connect: %w", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	err = backoff.Retry(ctx, backoff.Policy{}, func(ctx context.Context) error {
		return stream.Provision(ctx, js, stream.Config{Replicas: e.o.replicas})
	})
	if err != nil {
		return fmt.Errorf("nats: provision the streams: %w", err)
	}
	return nil
}

// stopNATS stops every node (SIGTERM, then kill).
func (e *env) stopNATS() error {
	var err error
	for _, node := range e.natsNodes {
		if node.c != nil {
			if serr := node.c.stop(20 * time.Second); serr != nil && err == nil {
				err = serr
			}
			node.c = nil
		}
	}
	return err
}

// natsRunning lists the running nodes' processes.
func (e *env) natsRunning() []*child {
	var out []*child
	for _, node := range e.natsNodes {
		if node.c != nil {
			out = append(out, node.c)
		}
	}
	return out
}

// NATSTraffic is the servers' message counters (/varz), summed over the
// nodes: in and out of every connection, and of client connections alone
// (the rest is route traffic between the nodes: replication and
// forwarding).
type NATSTraffic struct {
	InMsgs         int64 `json:"in_msgs"`
	OutMsgs        int64 `json:"out_msgs"`
	InBytes        int64 `json:"in_bytes"`
	OutBytes       int64 `json:"out_bytes"`
	InClientMsgs   int64 `json:"in_client_msgs"`
	OutClientMsgs  int64 `json:"out_client_msgs"`
	InClientBytes  int64 `json:"in_client_bytes"`
	OutClientBytes int64 `json:"out_client_bytes"`
}

// plus is a + sign·b, counter by counter.
func (a NATSTraffic) plus(b NATSTraffic, sign int64) NATSTraffic {
	return NATSTraffic{
		InMsgs: a.InMsgs + sign*b.InMsgs, OutMsgs: a.OutMsgs + sign*b.OutMsgs,
		InBytes: a.InBytes + sign*b.InBytes, OutBytes: a.OutBytes + sign*b.OutBytes,
		InClientMsgs: a.InClientMsgs + sign*b.InClientMsgs, OutClientMsgs: a.OutClientMsgs + sign*b.OutClientMsgs,
		InClientBytes: a.InClientBytes + sign*b.InClientBytes, OutClientBytes: a.OutClientBytes + sign*b.OutClientBytes,
	}
}

// natsTraffic reads every node's /varz and sums the counters; ok is false
// when a node did not answer.
func (e *env) natsTraffic(ctx context.Context) (t NATSTraffic, ok bool) {
	ok = len(e.natsNodes) > 0
	for i, node := range e.natsNodes {
		b, err := fetchMetrics(ctx, node.monitor+"/varz")
		var v NATSTraffic
		if err == nil {
			err = json.Unmarshal(b, &v)
		}
		if err != nil {
			e.note("%s /varz: %v", e.natsRole(i), err)
			ok = false
			continue
		}
		t = t.plus(v, 1)
	}
	return t, ok
}

// streamSeqs reads each stream's last sequence (/jsz: the messages it
// ever stored, KV buckets' streams included), the highest any node
// reports (a node holds the streams it replicates).
func (e *env) streamSeqs(ctx context.Context) map[string]uint64 {
	out := map[string]uint64{}
	for i, node := range e.natsNodes {
		b, err := fetchMetrics(ctx, node.monitor+"/jsz?accounts=true&streams=true")
		var j struct {
			Accounts []struct {
				Streams []struct {
					Name  string `json:"name"`
					State struct {
						LastSeq uint64 `json:"last_seq"`
					} `json:"state"`
				} `json:"stream_detail"`
			} `json:"account_details"`
		}
		if err == nil {
			err = json.Unmarshal(b, &j)
		}
		if err != nil {
			e.note("%s /jsz: %v", e.natsRole(i), err)
			return nil
		}
		for _, a := range j.Accounts {
			for _, st := range a.Streams {
				out[st.Name] = max(out[st.Name], st.State.LastSeq)
			}
		}
	}
	return out
}
