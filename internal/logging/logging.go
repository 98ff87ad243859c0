// Package logging builds jetjob's zap loggers: JSON in production, a
// readable console encoder for development. Field names used across the
// project are constants here so that logs can be searched by them.
package logging

import (
	"fmt"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Common field keys.
const (
	KeyRun    = "run_id"
	KeyJob    = "job_id"
	KeyShard  = "shard"
	KeyGroup  = "group"
	KeyWorker = "worker_id"
	// KeyTrace is the OpenTelemetry trace id (hex) of the run a line is
	// about, present while tracing records it: a log line finds its trace.
	KeyTrace = "trace_id"
)

// Run, Job, Shard, Group and Worker are the structured fields for those keys.
func Run(id int64) zap.Field     { return zap.Int64(KeyRun, id) }
func Job(id int64) zap.Field     { return zap.Int64(KeyJob, id) }
func Shard(n int) zap.Field      { return zap.Int(KeyShard, n) }
func Group(g string) zap.Field   { return zap.String(KeyGroup, g) }
func Worker(id string) zap.Field { return zap.String(KeyWorker, id) }

// Trace is the field of a trace id (hex).
func Trace(id string) zap.Field { return zap.String(KeyTrace, id) }

// New returns a logger. format is "json" or "console"; level is a zap level
// name ("debug", "info", "warn", "error").
func New(format, level string) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(strings.ToLower(level))
	if err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	var cfg zap.Config
	switch format {
	case "", "json":
		cfg = zap.NewProductionConfig()
		cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	case "console":
		cfg = zap.NewDevelopmentConfig()
		cfg.EncoderConfig.EncodeLevel = zapcore.CapitalColorLevelEncoder
		cfg.DisableStacktrace = true
	default:
		return nil, fmt.Errorf("log format %q: want json or console", format)
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	return cfg.Build()
}

// Named returns parent's child logger called name, or a logger that
// writes nothing when parent is nil: components take an optional logger
// among their dependencies, and a nil one means silence, not a panic.
func Named(parent *zap.Logger, name string) *zap.Logger {
	if parent == nil {
		return zap.NewNop()
	}
	return parent.Named(name)
}
