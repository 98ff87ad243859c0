// Command mapreduce is a jetjob worker whose handler maps and reduces
// (docs/worker.md, "Map/reduce"): a run of handler wordcount splits the
// text in its params into words, one part per word; each part counts its
// word's letters; the reduce adds the parts' counts up, once they have
// all succeeded, and sets the total as the fire's output.
//
//	go run ./examples/mapreduce -nats nats://127.0.0.1:4222 -group example -trigger-keys <the schedulers' public key>
//	jetjob jobs create --group example --name count --handler wordcount --params 'the quick brown fox' --max-retries 2
//	jetjob jobs trigger <id>
//
// The run you triggered succeeds at once with four parts (trigger type
// map, parts 0..3 of 4), then a reduce run (trigger type reduce, its
// parent run the one you triggered) outputs {"words":4,"letters":16}.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/shared/trigsign"
	"github.com/jetjob/jetjob/worker"
)

func main() {
	natsURL := flag.String("nats", nats.DefaultURL, "NATS server URL")
	group := flag.String("group", "example", "job group this worker serves")
	triggerKeys := flag.String("trigger-keys", os.Getenv("JETJOB_TRIGGER_PUBLIC_KEYS"),
		"the schedulers' trigger public keys, base64, comma-separated (env JETJOB_TRIGGER_PUBLIC_KEYS)")
	flag.Parse()
	log, err := zap.NewProduction()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *natsURL, *group, *triggerKeys, log); err != nil {
		log.Fatal("worker failed", zap.Error(err))
	}
}

func run(ctx context.Context, natsURL, group, triggerKeys string, log *zap.Logger) error {
	nc, err := nats.Connect(natsURL, nats.Name("jetjob map/reduce example"), nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("connect to NATS: %w", err)
	}
	defer nc.Close()
	pubs, err := trigsign.ParsePublicKeys(triggerKeys)
	if err != nil {
		return err
	}
	if len(pubs) == 0 {
		return errors.New("no trigger public keys: pass the schedulers' (-trigger-keys, JETJOB_TRIGGER_PUBLIC_KEYS)")
	}
	keys, err := trigsign.NewVerifier(pubs...)
	if err != nil {
		return err
	}
	w, err := worker.New(worker.Config{NATS: nc, Group: group, Logger: log, TriggerKeys: keys})
	if err != nil {
		return err
	}
	w.Handle("wordcount", wordCount, worker.WithReduce(addUp))
	return w.Run(ctx)
}

// wordCount is both the root and the parts: the root run maps its params'
// words, a part counts the letters of its word.
func wordCount(ctx context.Context, job *worker.Job) error {
	if job.IsMapPart() {
		var word string
		if err := job.Item(&word); err != nil {
			return err
		}
		job.Logger.Info("counting", zap.String("word", word), zap.Int("part", job.ShardIndex), zap.Int("of", job.ShardTotal))
		return job.SetOutput(utf8.RuneCountInString(word)) // what the reduce gets for this part
	}
	words := strings.Fields(job.Params)
	if len(words) == 0 {
		return errors.New("params: want some words to count") // FAILED: nothing mapped
	}
	return job.Map(words) // one part per word, once this run returns nil
}

// addUp is the reduce: it gets every part's output, in word order, once
// every part has succeeded.
func addUp(ctx context.Context, job *worker.Job, outputs []json.RawMessage) error {
	letters := 0
	for i, o := range outputs {
		var n int
		if err := json.Unmarshal(o, &n); err != nil {
			return fmt.Errorf("part %d's output %s: %w", i, o, err)
		}
		letters += n
	}
	return job.SetOutput(map[string]int{"words": len(outputs), "letters": letters})
}
