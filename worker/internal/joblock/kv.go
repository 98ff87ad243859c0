package joblock

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetjob/jetjob/shared/stream"
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

type waiter struct {
	Run    int64  `json:"run"`
	At     int64  `json:"at"` // fire time, Unix ms
	Worker string `json:"worker,omitempty"`
	// Beat counts a slots waiter's refreshes (slots.go), so that the
	// place of a waiter whose worker died is given up.
	Beat int64 `json:"beat,omitempty"`
}

// slotHolder is a run holding one of a job's slots.
type slotHolder struct {
	Run    int64  `json:"run"`
	Worker string `json:"worker"`
	Beat   int64  `json:"beat,omitempty"`
}

func (v *value) queued(run int64) bool {
	return slices.ContainsFunc(v.Queue, func(w waiter) bool { return w.Run == run })
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
			if ls.cfg.KV.Delete(ctx, key, jetstream.LastRevision(rev)) == nil {
				return 0
			}
			continue
		}
		body, _ := json.Marshal(v)
		if rev, err := ls.cfg.KV.Update(ctx, key, body, rev); err == nil {
			return rev
		}
	}
	return 0
}

// put writes v to the lock key over revision rev (0: the key is absent,
// create it) and returns the new revision.
func (ls *Locks) put(ctx context.Context, key string, v *value, rev uint64) (uint64, error) {
	body, _ := json.Marshal(v)
	if rev == 0 {
		return ls.cfg.KV.Create(ctx, key, body)
	}
	return ls.cfg.KV.Update(ctx, key, body, rev)
}

// read reads a job lock from the bucket's stream leader and returns its
// value and revision, or jetstream.ErrKeyNotFound when it is absent or
// deleted. Not KeyValue.Get: that is a direct get, which any replica may
// answer, including one still catching up after a NATS node's outage,
// while a waiting run must see the revision its compare-and-set is checked
// against, which the leader holds. Only contended locks are read this way,
// so the leader's extra work is small.
func (ls *Locks) read(ctx context.Context, key string) ([]byte, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := json.Marshal(map[string]string{"last_by_subj": "$KV." + stream.LocksBucket + "." + key})
	msg, err := ls.cfg.NATS.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_"+stream.LocksBucket, req)
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
	if bytes.Contains(resp.Message.Hdrs, []byte("KV-Operation")) {
		return nil, 0, jetstream.ErrKeyNotFound
	}
	return resp.Message.Data, resp.Message.Seq, nil
}
