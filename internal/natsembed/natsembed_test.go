package natsembed

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/testtier"
	"github.com/jetjob/jetjob/internal/testwait"
)

// A restarted server on the same store directory and port keeps the
// messages its streams held: what `dev` and the outage tests rely on.
func TestRestartKeepsMessages(t *testing.T) {
	testtier.Needs(t, testtier.NATS)
	dir := t.TempDir()
	s, err := Start(Options{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	port := s.Port()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	publish := func(url string) {
		nc, err := nats.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := js.Publish(ctx, "t.a", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	publish(s.ClientURL())
	s.Shutdown()

	s2, err := Start(Options{StoreDir: dir, Port: port})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Shutdown()
	if s2.Port() != port {
		t.Fatalf("restarted on port %d, want %d", s2.Port(), port)
	}
	nc, err := nats.Connect(s2.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	st, err := js.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Fatalf("stream holds %d messages after restart, want 1", info.State.Msgs)
	}
}

// Three embedded nodes on loopback form a JetStream cluster that keeps an
// R3 stream on every node, and each serves its monitoring endpoints: the
// benchmark's replicated setup (jetjob-bench --nats-cluster 3).
func TestClusterReplicatesStreams(t *testing.T) {
	testtier.Needs(t, testtier.NATS)
	ports, err := RoutePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	var nodes []*Server
	for i, p := range ports {
		s, err := Start(Options{StoreDir: t.TempDir(), Name: fmt.Sprintf("n%d", i), MonitorPort: -1,
			Cluster: &ClusterOptions{Name: "test", Port: p, Routes: routes}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Shutdown)
		nodes = append(nodes, s)
	}
	testwait.Eventually(t, 60*time.Second, "every node current with the meta leader", func() bool {
		for _, s := range nodes {
			if !s.JetStreamReady() {
				return false
			}
		}
		return true
	})
	nc, err := nats.Connect(nodes[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "t.a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 30*time.Second, "two current replicas besides the leader", func() bool {
		info, err := st.Info(ctx)
		if err != nil || info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
			return false
		}
		for _, r := range info.Cluster.Replicas {
			if !r.Current {
				return false
			}
		}
		return info.State.Msgs == 1
	})
	for _, s := range nodes {
		if !strings.HasPrefix(s.MonitorURL(), "http://127.0.0.1:") {
			t.Fatalf("monitor URL %q", s.MonitorURL())
		}
	}
	resp, err := http.Get(nodes[0].MonitorURL() + "/varz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		InMsgs int64 `json:"in_msgs"`
		Routes int   `json:"routes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	if v.InMsgs == 0 || v.Routes == 0 {
		t.Fatalf("varz of node 0: in_msgs %d, routes %d; want both above 0", v.InMsgs, v.Routes)
	}
}
