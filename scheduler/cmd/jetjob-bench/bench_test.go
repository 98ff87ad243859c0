package main

import (
	"reflect"
	"testing"
	"time"
)

func TestCPUPerRunByKind(t *testing.T) {
	ps := []ProcStat{
		{Role: "orchestrator", CPUWindow: 0.1}, {Role: "nats", CPUWindow: 1}, {Role: "postgres", CPUWindow: 2},
		{Role: "scheduler-0", CPUWindow: 0.5}, {Role: "scheduler-1", CPUWindow: 0.5},
		{Role: "worker-0", CPUWindow: 0.4}, {Role: "worker-1", CPUWindow: 0.6},
	}
	c := cpuPerRun(ps, 1000)
	if c == nil || c.Runs != 1000 || c.CPUSeconds != 5.1 || c.Ms != 5.1 {
		t.Fatalf("cpuPerRun = %+v, want 5.1 cpu-s, 5.1 ms per run over 1000 runs", c)
	}
	want := []KindCPU{{"postgres", 1, 2, 2}, {"nats", 1, 1, 1}, {"schedulers", 2, 1, 1}, {"workers", 2, 1, 1}, {"orchestrator", 1, 0.1, 0.1}}
	if len(c.ByKind) != len(want) {
		t.Fatalf("by kind %+v, want %+v", c.ByKind, want)
	}
	for i := range want {
		if c.ByKind[i] != want[i] {
			t.Errorf("kind %d = %+v, want %+v", i, c.ByKind[i], want[i])
		}
	}
	if cpuPerRun(ps, 0) != nil {
		t.Error("cpuPerRun with no runs: want nil")
	}
}

func TestRecovered(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := func(i int, fires, runs int64, p99 float64) LagSecond {
		return LagSecond{At: t0.Add(time.Duration(i) * time.Second), Fires: fires, Runs: runs, StartP99Ms: p99}
	}
	stopped := t0.Add(1500 * time.Millisecond)
	for _, tc := range []struct {
		name string
		secs []LagSecond
		want int
	}{
		{"recovers", []LagSecond{sec(0, 10, 10, 20), sec(1, 10, 10, 30), sec(2, 10, 10, 4000), sec(3, 10, 10, 900), sec(4, 10, 10, 50)}, 3},
		{"a missing run is not recovered", []LagSecond{sec(2, 10, 10, 4000), sec(3, 10, 9, 100), sec(4, 10, 10, 50)}, 2},
		{"never slow: the first fire time after the stop", []LagSecond{sec(0, 10, 10, 20), sec(1, 10, 10, 30), sec(2, 10, 10, 30)}, 2},
		{"slow at the end", []LagSecond{sec(2, 10, 10, 20), sec(3, 10, 10, 3000)}, -1},
		{"nothing after the stop", []LagSecond{sec(0, 10, 10, 20), sec(1, 10, 10, 30)}, -1},
	} {
		if got := recovered(tc.secs, 1000, stopped); got != tc.want {
			t.Errorf("%s: recovered = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// A cluster's nodes (nats-0, nats-1, ...) are one kind, nats, as the
// single server is.
func TestCPUPerRunCountsClusterNodesAsNATS(t *testing.T) {
	ps := []ProcStat{{Role: "nats-0", CPUWindow: 1}, {Role: "nats-1", CPUWindow: 1}, {Role: "nats-2", CPUWindow: 2},
		{Role: "worker-0", CPUWindow: 1}}
	c := cpuPerRun(ps, 1000)
	if len(c.ByKind) != 2 || c.ByKind[0] != (KindCPU{"nats", 3, 4, 4}) || c.ByKind[1].Kind != "workers" {
		t.Fatalf("by kind %+v, want nats (3 processes, 4 cpu-s, 4 ms) then workers", c.ByKind)
	}
}

// Traffic per run: every counter over the runs, and what came in over
// routes (replication) is all in less the clients' in.
func TestNATSPerRun(t *testing.T) {
	start := NATSTraffic{InMsgs: 100, OutMsgs: 100, InBytes: 1000, OutBytes: 1000, InClientMsgs: 50, OutClientMsgs: 50,
		InClientBytes: 500, OutClientBytes: 500}
	end := NATSTraffic{InMsgs: 4100, OutMsgs: 3100, InBytes: 401000, OutBytes: 301000, InClientMsgs: 1050,
		OutClientMsgs: 2050, InClientBytes: 100500, OutClientBytes: 200500}
	got := natsPerRun(end.plus(start, -1), 1000, 3, 3)
	want := NATSPerRun{Servers: 3, Replicas: 3, InMsgs: 4, OutMsgs: 3, InBytes: 400, OutBytes: 300, ClientInMsgs: 1,
		ClientOutMsgs: 2, ClientInBytes: 100, ClientOutBytes: 200, RouteInMsgs: 3, RouteInBytes: 300}
	if !reflect.DeepEqual(*got, want) {
		t.Fatalf("natsPerRun = %+v, want %+v", *got, want)
	}
	st := streamsPerRun(map[string]uint64{"JETJOB_TRIGGERS": 10, "KV_JETJOB_LOCKS": 5},
		map[string]uint64{"JETJOB_TRIGGERS": 510, "KV_JETJOB_LOCKS": 5, "JETJOB_EVENTS": 250}, 1000)
	if want := map[string]float64{"JETJOB_TRIGGERS": 0.5, "JETJOB_EVENTS": 0.25}; !reflect.DeepEqual(st, want) {
		t.Fatalf("streamsPerRun = %v, want %v (streams that stored nothing left out)", st, want)
	}
}

// A SKIPPED run standing for a range of missed fires counts for those of
// them within the window.
func TestFiresIn(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	for _, tc := range []struct {
		name        string
		n           int
		first, last time.Time
		want        int64
	}{
		{"inside", 5, sec(2), sec(6), 5},
		{"from before the window", 10, sec(-5), sec(4), 5},
		{"past its end", 10, sec(5), sec(14), 5},
		{"around it", 30, sec(-10), sec(19), 10},
		{"outside", 3, sec(20), sec(22), 0},
		{"one fire", 1, sec(3), sec(3), 1},
	} {
		if got := firesIn(tc.n, tc.first, tc.last, sec(0), sec(10)); got != tc.want {
			t.Errorf("%s: firesIn = %d, want %d", tc.name, got, tc.want)
		}
	}
}
