package tracing

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/jetjob/jetjob/internal/runtrace"
)

// Tracing is off unless the environment asks for it, and a setting jetjob
// cannot honour is an error naming its variable.
func TestEnabled(t *testing.T) {
	for _, c := range []struct {
		env     map[string]string
		on      bool
		errWith string
	}{
		{env: nil, on: false},
		{env: map[string]string{EnvEndpoint: "http://collector:4318"}, on: true},
		{env: map[string]string{EnvTracesEndpoint: "http://collector:4318/v1/traces"}, on: true},
		{env: map[string]string{EnvExporter: "otlp"}, on: true},
		{env: map[string]string{EnvExporter: "none", EnvEndpoint: "http://collector:4318"}, on: false},
		{env: map[string]string{EnvSDKDisabled: "true", EnvExporter: "otlp"}, on: false},
		{env: map[string]string{EnvExporter: "zipkin"}, errWith: EnvExporter},
		{env: map[string]string{EnvEndpoint: "http://c:4317", EnvProtocol: "grpc"}, errWith: EnvProtocol},
		{env: map[string]string{EnvEndpoint: "http://c:4318", EnvProtocol: "grpc", EnvTracesProtocol: "http/protobuf"}, on: true},
	} {
		on, err := Enabled(func(k string) string { return c.env[k] })
		if c.errWith != "" {
			if err == nil || !strings.Contains(err.Error(), c.errWith) {
				t.Errorf("%v: error %v, want one naming %s", c.env, err, c.errWith)
			}
			continue
		}
		if err != nil || on != c.on {
			t.Errorf("%v: on %v, %v; want %v", c.env, on, err, c.on)
		}
	}
}

// A root span started for a run has the run's trace id; any other root a
// random one.
func TestProviderRunTraceIDs(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := NewProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background()) //nolint:errcheck
	tr := tp.Tracer("test")
	_, run := tr.Start(runtrace.WithRun(context.Background(), 1234), "run", trace.WithNewRoot())
	run.End()
	_, other := tr.Start(context.Background(), "other")
	other.End()
	if got, want := run.SpanContext().TraceID(), runtrace.RunTraceID(1234); got != want {
		t.Errorf("run span trace id %s, want %s", got, want)
	}
	if !strings.HasPrefix(runtrace.RunTraceID(1234).String(), "00000000000004d2") {
		t.Errorf("run 1234's trace id %s does not begin with the run id in hex", runtrace.RunTraceID(1234))
	}
	if id := other.SpanContext().TraceID(); !id.IsValid() || id == runtrace.RunTraceID(1234) || id == runtrace.RunTraceID(0) {
		t.Errorf("unrelated root span has trace id %s", id)
	}
}
