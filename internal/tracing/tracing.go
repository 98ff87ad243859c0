// Package tracing sets up OpenTelemetry tracing for jetjob's binaries
// (jetjob-scheduler, jetjob-worker): the SDK's tracer provider with an
// OTLP/HTTP exporter, configured by the standard OTEL_* environment
// variables and off unless they ask for it.
//
// Only main packages import it: it brings the SDK and the exporter's
// dependencies (protobuf). Library code, the worker SDK included, uses
// the API alone (internal/runtrace), which costs nothing while no provider
// is installed.
package tracing

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/jetjob/jetjob/internal/runtrace"
)

// Environment variables Setup reads itself; the exporter reads the rest of
// OTEL_EXPORTER_OTLP_* (headers, timeout, compression, certificates), the
// SDK OTEL_TRACES_SAMPLER(_ARG) and OTEL_BSP_*, the resource
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
const (
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvExporter       = "OTEL_TRACES_EXPORTER"
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// Enabled decides from the environment (getenv) whether to export traces.
// Unlike the specification's default (export to localhost), tracing is
// off unless asked for: OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint
// set. OTEL_TRACES_EXPORTER=none and OTEL_SDK_DISABLED=true turn it off
// whatever else is set. Values jetjob cannot honour (another exporter, the
// gRPC protocol) are errors naming the variable, not silently ignored.
func Enabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") {
		return false, nil
	}
	on := getenv(EnvEndpoint) != "" || getenv(EnvTracesEndpoint) != ""
	if v := strings.TrimSpace(getenv(EnvExporter)); v != "" {
		on = false
		for e := range strings.SplitSeq(v, ",") {
			switch strings.TrimSpace(e) {
			case "none":
				return false, nil
			case "otlp":
				on = true
			default:
				return false, fmt.Errorf("%s=%q: jetjob exports traces with otlp (over HTTP) only: use otlp or none", EnvExporter, v)
			}
		}
	}
	if !on {
		return false, nil
	}
	for _, k := range []string{EnvTracesProtocol, EnvProtocol} {
		if v := getenv(k); v != "" {
			if v != "http/protobuf" {
				return false, fmt.Errorf("%s=%q: jetjob's OTLP exporter speaks http/protobuf only (port 4318 of a collector)", k, v)
			}
			break // the traces-specific variable wins
		}
	}
	return true, nil
}

// Setup installs a global tracer provider exporting over OTLP/HTTP when
// the environment asks for it (Enabled), and returns the function that
// flushes and stops it: call it at exit (after SIGTERM), or the last
// spans are lost. With tracing off it changes nothing and shutdown does
// nothing. serviceName is service.name unless OTEL_SERVICE_NAME (or
// OTEL_RESOURCE_ATTRIBUTES) sets it. Export failures are logged to log.
func Setup(ctx context.Context, serviceName string, log *zap.Logger) (shutdown func(context.Context) error, err error) {
	nothing := func(context.Context) error { return nil }
	on, err := Enabled(os.Getenv)
	if err != nil || !on {
		return nothing, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nothing, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := Resource(ctx, serviceName)
	if err != nil {
		return nothing, err
	}
	tp := NewProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(exp))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("tracing: exporting spans failed", zap.Error(err))
	}))
	otel.SetTracerProvider(tp)
	log.Info("tracing on: exporting spans over OTLP/HTTP", zap.String("service", serviceName))
	return func(ctx context.Context) error {
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("tracing: flushing spans: %w", err)
		}
		return nil
	}, nil
}

// ShutdownTimeout bounds the flush of the last spans at exit.
const ShutdownTimeout = 5 * time.Second

// Resource describes this process: service.name (serviceName unless the
// environment names it), the SDK, then OTEL_RESOURCE_ATTRIBUTES and
// OTEL_SERVICE_NAME, which win.
func Resource(ctx context.Context, serviceName string) (*resource.Resource, error) {
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", serviceName)),
		resource.WithTelemetrySDK(), resource.WithHost(), resource.WithProcessPID(),
		resource.WithFromEnv(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource (%s): %w", "OTEL_RESOURCE_ATTRIBUTES", err)
	}
	return res, nil
}

// NewProvider is the SDK's tracer provider with jetjob's id generator
// (runIDs), so that a run's trace has runtrace.RunTraceID as its id. Tests
// build it with an in-memory exporter.
func NewProvider(opts ...sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
	return sdktrace.NewTracerProvider(append([]sdktrace.TracerProviderOption{sdktrace.WithIDGenerator(runIDs{})}, opts...)...)
}

// runIDs gives a root span started from a context marked with a run
// (runtrace.WithRun) that run's trace id, one marked with a workflow run
// (runtrace.WithWorkflow) that run's trace id and workflow span id, and
// random ids otherwise.
type runIDs struct{}

func (runIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if id, ok := runtrace.WorkflowFromContext(ctx); ok {
		return runtrace.RunTraceID(id), runtrace.WorkflowSpanID(id)
	}
	if id, ok := runtrace.RunFromContext(ctx); ok {
		return runtrace.RunTraceID(id), newSpanID()
	}
	var tid trace.TraceID
	for !tid.IsValid() {
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid, newSpanID()
}

func (runIDs) NewSpanID(context.Context, trace.TraceID) trace.SpanID { return newSpanID() }

func newSpanID() trace.SpanID {
	var sid trace.SpanID
	for !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}

// Start is Setup for a main package: stop flushes the last spans within
// ShutdownTimeout, on a context of its own (the process's context is
// cancelled by then: SIGTERM), and logs a failure. Call it deferred.
func Start(ctx context.Context, serviceName string, log *zap.Logger) (stop func(), err error) {
	shutdown, err := Setup(ctx, serviceName, log)
	if err != nil {
		return func() {}, err
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			log.Warn("tracing: last spans not exported", zap.Error(err))
		}
	}, nil
}
