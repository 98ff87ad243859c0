// Package route picks the worker a trigger goes to: xxl-job's routing
// strategies over the live workers of a group, as the worker registry sees
// them.
//
// The default strategy, any, picks nobody: the trigger goes to the group's
// shared queue and NATS hands it to whichever worker pulls first. Every
// other strategy names one worker and the trigger goes to that worker's
// directed subject, jetjob.trigger.<group>.w.<id>. The candidates are the
// live workers of the group that registered the job's handler (all live
// workers of the group if none did, so that the run fails visibly naming
// the missing handler), in id order. With no live worker at all a trigger
// goes to the shared queue, where it waits in JetStream until a worker
// comes; a directed trigger whose worker dies is moved there too
// (scheduler/internal/reroute).
//
// round, lfu and lru keep their counts in this process. A job's triggers
// are published by the owner of its shard, so the counts follow the job
// for as long as one scheduler owns it and start afresh after a handover,
// as in xxl-job (whose counts live in one admin's memory).
package route

import (
	"cmp"
	"context"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/logging"
	"github.com/jetjob/jetjob/internal/policy"
	"github.com/jetjob/jetjob/internal/stream"
	"github.com/jetjob/jetjob/shared/wire"
)

// DefaultAskTimeout bounds a ping or idle beat: a live worker answers in
// well under a millisecond; one that does not within this is passed by.
const DefaultAskTimeout = 250 * time.Millisecond

// lfuReset is how often lfu forgets its counts (xxl-job: a day), so that a
// worker added later is not flooded until it catches up.
const lfuReset = 24 * time.Hour

// virtualNodes is how many points each worker has on the hash ring: enough
// that jobs spread evenly over a handful of workers.
const virtualNodes = 100

// Picker is safe for concurrent use.
type Picker struct {
	live func(group string) []wire.WorkerInfo
	nc   *nats.Conn
	log  *zap.Logger
	// AskTimeout bounds ping and idle-beat requests (DefaultAskTimeout).
	AskTimeout time.Duration

	mu       sync.Mutex
	round    map[int64]uint64
	lfu      map[int64]map[string]uint64
	lfuSince time.Time
	lru      map[int64]map[string]time.Time
	rings    map[string]*ring // by the candidate ids, joined
}

// New returns a picker over the live workers live(group) returns (sorted
// by id); nc carries ping and idle-beat requests.
func New(live func(group string) []wire.WorkerInfo, nc *nats.Conn, log *zap.Logger) *Picker {
	return &Picker{
		live: live, nc: nc, log: log.Named("route"), AskTimeout: DefaultAskTimeout,
		round: map[int64]uint64{}, lfu: map[int64]map[string]uint64{}, lfuSince: time.Now(),
		lru: map[int64]map[string]time.Time{}, rings: map[string]*ring{},
	}
}

// Candidates returns the ids of the live workers of group that can run
// handler, in id order (every live worker of the group if none registered
// it).
func (p *Picker) Candidates(group, handler string) []string {
	return candidates(p.live(group), handler)
}

// candidates is Candidates over workers.
func candidates(workers []wire.WorkerInfo, handler string) []string {
	var all, with []string
	for _, w := range workers {
		all = append(all, w.ID)
		if slices.Contains(w.Handlers, handler) {
			with = append(with, w.ID)
		}
	}
	if len(with) == 0 {
		with = all
	}
	slices.Sort(with)
	return with
}

// BatchTarget is the worker a trigger batch of job's runs goes to when job
// routes consistent_hash: the one Pick would choose for a lone trigger of
// it, if that worker's heartbeat says it reads batches on its directed
// subject (wire.WorkerInfo.DirectedBatches), else "" (the group's batch
// subject, which every worker reads). So a job's runs keep meeting the same
// worker, batched or not, and an older worker never gets a batch it would
// take for one malformed trigger.
func (p *Picker) BatchTarget(job int64, group, handler string) string {
	workers := p.live(group)
	ids := candidates(workers, handler)
	if len(ids) == 0 {
		return ""
	}
	id := p.ring(ids).lookup(job)
	for _, w := range workers {
		if w.ID == id && w.DirectedBatches {
			return id
		}
	}
	return ""
}

// Live reports whether worker id of group is live.
func (p *Picker) Live(group, id string) bool {
	return slices.ContainsFunc(p.live(group), func(w wire.WorkerInfo) bool { return w.ID == id })
}

// Pick returns the worker a trigger of job goes to under strategy, or ""
// for the group's shared queue (strategy any, an unknown strategy, no live
// worker). sharding_broadcast is not picked here: dispatch sends one
// trigger to each of Candidates.
func (p *Picker) Pick(ctx context.Context, job int64, group, handler string, strategy policy.Route) string {
	switch strategy {
	case policy.RouteAny, "", policy.RouteShardingBroadcast:
		return ""
	}
	ids := p.Candidates(group, handler)
	if len(ids) == 0 {
		return ""
	}
	switch strategy {
	case policy.RouteFirst:
		return ids[0]
	case policy.RouteLast:
		return ids[len(ids)-1]
	case policy.RouteRandom:
		return ids[rand.IntN(len(ids))]
	case policy.RouteRound:
		return p.pickRound(job, ids)
	case policy.RouteConsistentHash:
		return p.ring(ids).lookup(job)
	case policy.RouteLFU:
		return p.pickLFU(job, ids)
	case policy.RouteLRU:
		return p.pickLRU(job, ids)
	case policy.RouteFailover:
		if id := p.firstAnswering(ctx, ids, wire.ControlRequest{Op: wire.OpPing}); id != "" {
			return id
		}
		p.log.Warn("no worker answered a ping; the trigger goes to the shared queue", logging.Job(job), logging.Group(group))
		return ""
	case policy.RouteBusyover:
		if id := p.firstAnswering(ctx, ids, wire.ControlRequest{Op: wire.OpIdleBeat, JobID: job}); id != "" {
			return id
		}
		// Every worker runs the job (or none answered): the trigger waits
		// under the job's block strategy on the first, like xxl-job's
		// serial executor queue, instead of being dropped.
		return ids[0]
	}
	return ""
}

// pickRound cycles through the candidates per job, starting at a random
// one so that jobs created together do not all start on the same worker.
func (p *Picker) pickRound(job int64, ids []string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok := p.round[job]
	if !ok {
		n = rand.Uint64N(uint64(len(ids)))
	}
	p.round[job] = n + 1
	return ids[n%uint64(len(ids))]
}

// pickLFU picks the candidate this job was sent to least often (ties: id
// order), forgetting all counts every lfuReset.
func (p *Picker) pickLFU(job int64, ids []string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if time.Since(p.lfuSince) > lfuReset {
		p.lfu, p.lfuSince = map[int64]map[string]uint64{}, time.Now()
	}
	counts := p.lfu[job]
	if counts == nil {
		counts = map[string]uint64{}
		p.lfu[job] = counts
	}
	prune(counts, ids)
	best := slices.MinFunc(ids, func(a, b string) int { return cmp.Compare(counts[a], counts[b]) })
	counts[best]++
	return best
}

// pickLRU picks the candidate this job was sent to longest ago; one it was
// never sent to comes first (ties: id order).
func (p *Picker) pickLRU(job int64, ids []string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	used := p.lru[job]
	if used == nil {
		used = map[string]time.Time{}
		p.lru[job] = used
	}
	prune(used, ids)
	best := slices.MinFunc(ids, func(a, b string) int { return used[a].Compare(used[b]) })
	used[best] = time.Now()
	return best
}

// prune forgets workers that are no longer candidates.
func prune[V any](m map[string]V, ids []string) {
	for id := range m {
		if !slices.Contains(ids, id) {
			delete(m, id)
		}
	}
}

// firstAnswering asks every candidate at once and returns the first, in id
// order, that answers req within AskTimeout: ping → any answer; idle beat
// → an answer that the job does not run there. "" if none.
func (p *Picker) firstAnswering(ctx context.Context, ids []string, req wire.ControlRequest) string {
	req.V = wire.Version
	if err := req.Validate(); err != nil {
		p.log.Error("invalid control request", zap.Error(err))
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, p.AskTimeout)
	defer cancel()
	answers := make([]chan bool, len(ids))
	for i, id := range ids {
		answers[i] = make(chan bool, 1)
		go func() {
			answers[i] <- p.ask(ctx, id, req)
		}()
	}
	// In id order: a later worker's answer counts only once every earlier
	// one has failed, so the pick is as stable as the strategy promises.
	for i, id := range ids {
		if <-answers[i] {
			return id
		}
	}
	return ""
}

func (p *Picker) ask(ctx context.Context, id string, req wire.ControlRequest) bool {
	reply, err := stream.Ask(ctx, p.nc, id, req)
	return err == nil && (req.Op != wire.OpIdleBeat || !reply.Busy)
}

// ring is a consistent-hash ring with virtualNodes points per worker.
type ring struct {
	points []uint64
	owner  map[uint64]string
}

// ring returns the ring of ids, built once per distinct live set.
func (p *Picker) ring(ids []string) *ring {
	key := ""
	for _, id := range ids {
		key += id + "\x00"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.rings[key]; r != nil {
		return r
	}
	r := &ring{owner: make(map[uint64]string, len(ids)*virtualNodes)}
	for _, id := range ids {
		for v := range virtualNodes {
			h := hash64(id + "#" + strconv.Itoa(v))
			if _, taken := r.owner[h]; taken {
				continue // a collision keeps the first owner: still deterministic
			}
			r.owner[h] = id
			r.points = append(r.points, h)
		}
	}
	slices.Sort(r.points)
	if len(p.rings) > 64 { // live sets change rarely; keep the cache small
		clear(p.rings)
	}
	p.rings[key] = r
	return r
}

// lookup returns the owner of the first point at or after the job's hash.
func (r *ring) lookup(job int64) string {
	h := hash64("job-" + strconv.FormatInt(job, 10))
	i, _ := slices.BinarySearch(r.points, h)
	if i == len(r.points) {
		i = 0
	}
	return r.owner[r.points[i]]
}

func hash64(s string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(s))
	// FNV's low bits mix poorly for similar inputs; a final avalanche
	// (splitmix64's) spreads neighbouring ids over the whole ring.
	x := f.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
