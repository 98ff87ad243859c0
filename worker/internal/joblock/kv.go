package joblock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/internal/backoff"
	"github.com/jetjob/jetjob/internal/flowkv"
	"github.com/jetjob/jetjob/internal/stream"
)

// value is a lock key's value in JETJOB_LOCKS (docs/protocol.md, "Job
// locks"): one holder and its queue, or a capped concurrent job's slots and
// their queue.
type value struct {
	Holder int64 `json:"holder"`
	// Worker runs Holder; empty when written by an older worker, which
	// releases by deleting the key.
	Worker string `json:"worker,omitempty"`
	// Beat counts the holder's refreshes: only the holder changes it.
	Beat  int64    `json:"beat,omitempty"`
	Queue []waiter `json:"queue,omitempty"`
	// Slots are the runs holding a capped concurrent job's slots lock
	// (slots.go); such a lock has no Holder.
	Slots []slotHolder `json:"slots,omitempty"`
}

// freshValue is the value a run writes when it takes a lock nobody waits
// for, json.Marshal(value{Holder: run, Worker: the worker's id}), written by
// hand: it is what most lock writes carry, and reflection was a tenth of a
// busy worker's lock CPU.
func (ls *Locks) freshValue(run int64) []byte {
	b := make([]byte, 0, 32+len(ls.workerJSON))
	b = append(b, `{"holder":`...)
	b = strconv.AppendInt(b, run, 10)
	if ls.cfg.WorkerID != "" {
		b = append(b, `,"worker":`...)
		b = append(b, ls.workerJSON...)
	}
	return append(b, '}')
}

// waiter and slotHolder are a lock value's queue entries and slots, in
// the shape package flowkv gives every reader of the buckets.
type (
	waiter     = flowkv.Waiter
	slotHolder = flowkv.Holder
)

func (v *value) queued(run int64) bool { return v.place(run) >= 0 }

// place is run's index in the queue, -1 if it is not queued.
func (v *value) place(run int64) int {
	return slices.IndexFunc(v.Queue, func(w waiter) bool { return w.Run == run })
}

// empty says whether v names nobody: such a key is deleted, not written.
func (v *value) empty() bool { return v.Holder == 0 && len(v.Slots) == 0 && len(v.Queue) == 0 }

// update applies change to the lock key by compare-and-set until it
// sticks; a lock left with no holder, slot or waiter is deleted. change
// reports whether it changed anything. It returns the revision written, 0
// if none.
func (ls *Locks) update(ctx context.Context, key string, change func(*value) bool) uint64 {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		val, rev, err := ls.read(ctx, key)
		if err != nil {
			return 0 // gone (expired) or unreachable: nothing to undo
		}
		var v value
		if json.Unmarshal(val, &v) != nil || !change(&v) {
			return 0
		}
		if v.empty() {
			if ls.del(ctx, key, rev) == nil {
				return 0
			}
			continue
		}
		body, _ := json.Marshal(v)
		if rev, err := ls.write(ctx, key, body, rev); err == nil {
			return rev
		}
	}
	return 0
}

// put writes v to the lock key over revision rev (0: the key is absent,
// create it) and returns the new revision.
func (ls *Locks) put(ctx context.Context, key string, v *value, rev uint64) (uint64, error) {
	body, _ := json.Marshal(v)
	return ls.write(ctx, key, body, rev)
}

// errChanged is a compare-and-set that lost: the key's last revision is
// not the one the write expected (someone wrote it meanwhile, or, for a
// create, the key holds a value or a delete marker).
var errChanged = errors.New("job lock changed meanwhile")

// write stores body as the lock key's value if the key's last revision is
// rev (0: no message at all for the key), and returns the new revision;
// errChanged if it is not.
//
// This is what KeyValue.Create and Update send — a publish to the key's
// subject with the header Nats-Expected-Last-Subject-Sequence, acknowledged
// by the stream — without their client-side work: the key's validation by
// regular expression (keys here are built by Key and SlotsKey from
// integers, and the flow controls' by GroupSlotsKey, KeySlotsKey and
// RateKey from a group name, integers and hex digits: always valid, the
// tokens the subject permissions name, internal/stream), and Create's follow-up get after every failed
// create, which looks for a delete marker to create over. Here a failed
// create reads the key only when the caller needs its value anyway (read
// returns a delete marker's revision with ErrKeyNotFound, and the caller
// creates over it). The bucket's TTL is the stream's MaxAge (no
// per-message TTL, stream.Locks), so a raw publish ages out exactly as a
// KeyValue write does. Like the client's publish, a write that finds no
// stream to answer (a leader election) is retried twice, 250 ms apart:
// nothing was stored.
func (ls *Locks) write(ctx context.Context, key string, body []byte, rev uint64) (uint64, error) {
	m := nats.Msg{Subject: lockSubject(key), Data: body, Header: nats.Header{}}
	m.Header[expectedLastSubjSeq] = []string{strconv.FormatUint(rev, 10)}
	return ls.publish(ctx, key, &m)
}

// del deletes the lock key if its last revision is rev: a delete marker,
// as KeyValue.Delete with LastRevision writes it.
func (ls *Locks) del(ctx context.Context, key string, rev uint64) error {
	m := nats.Msg{Subject: lockSubject(key), Header: nats.Header{}}
	m.Header[kvOperation] = []string{"DEL"}
	m.Header[expectedLastSubjSeq] = []string{strconv.FormatUint(rev, 10)}
	_, err := ls.publish(ctx, key, &m)
	return err
}

const (
	expectedLastSubjSeq = "Nats-Expected-Last-Subject-Sequence"
	kvOperation         = "KV-Operation"
	// The stream's error codes for a wrong last sequence: on a stream of
	// one replica, and on a replicated one.
	errCodeWrongLastSeq         = 10071
	errCodeWrongLastSeqReplicas = 10164
)

// lockSubject is the subject of the lock key's messages.
func lockSubject(key string) string { return "$KV." + stream.BucketOf(key) + "." + key }

// publish sends m to the locks stream and returns the revision it was
// stored at.
func (ls *Locks) publish(ctx context.Context, key string, m *nats.Msg) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var msg *nats.Msg
	err := backoff.Retry(ctx, backoff.Policy{
		Backoff:     backoff.Backoff{Initial: 250 * time.Millisecond, Max: 250 * time.Millisecond},
		MaxAttempts: 3,
	}, func(ctx context.Context) (err error) {
		msg, err = ls.cfg.NATS.RequestMsgWithContext(ctx, m)
		if errors.Is(err, nats.ErrNoResponders) {
			return err // no stream answered (a leader election): nothing was stored
		}
		return backoff.Permanent(err)
	})
	if err != nil {
		return 0, fmt.Errorf("write job lock %s: %w", key, err)
	}
	var ack struct {
		Seq   uint64 `json:"seq"`
		Error *struct {
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &ack); err != nil {
		return 0, fmt.Errorf("write job lock %s: %w", key, err)
	}
	switch {
	case ack.Error != nil && (ack.Error.ErrCode == errCodeWrongLastSeq || ack.Error.ErrCode == errCodeWrongLastSeqReplicas):
		return 0, errChanged
	case ack.Error != nil:
		return 0, fmt.Errorf("write job lock %s: %s", key, ack.Error.Description)
	case ack.Seq == 0:
		return 0, fmt.Errorf("write job lock %s: no revision in the answer %q", key, msg.Data)
	}
	return ack.Seq, nil
}

// read reads a job lock from the bucket's stream leader and returns its
// value and revision, or jetstream.ErrKeyNotFound when it is absent or
// deleted — with, for a deleted key, the delete marker's revision, over
// which a write creates the key (0 when absent). Not KeyValue.Get: that is a direct get, which any replica may
// answer, including one still catching up after a NATS node's outage,
// while a waiting run must see the revision its compare-and-set is checked
// against, which the leader holds. Only contended locks are read this way,
// so the leader's extra work is small.
func (ls *Locks) read(ctx context.Context, key string) ([]byte, uint64, error) {
	ls.reads.Add(1)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := json.Marshal(map[string]string{"last_by_subj": lockSubject(key)})
	msg, err := ls.cfg.NATS.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_"+stream.BucketOf(key), req)
	if err != nil {
		return nil, 0, fmt.Errorf("read job lock %s: %w", key, err)
	}
	var resp struct {
		Message *struct {
			Seq  uint64 `json:"seq"`
			Hdrs []byte `json:"hdrs"`
			Data []byte `json:"data"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, 0, fmt.Errorf("read job lock %s: %w", key, err)
	}
	switch {
	case resp.Error != nil && resp.Error.Code == 404:
		return nil, 0, jetstream.ErrKeyNotFound
	case resp.Error != nil:
		return nil, 0, fmt.Errorf("read job lock %s: %s", key, resp.Error.Description)
	case resp.Message == nil:
		return nil, 0, fmt.Errorf("read job lock %s: empty answer", key)
	}
	// A delete or purge marker: the KV-Operation header says so.
	if bytes.Contains(resp.Message.Hdrs, []byte(kvOperation)) {
		return nil, resp.Message.Seq, jetstream.ErrKeyNotFound
	}
	return resp.Message.Data, resp.Message.Seq, nil
}
