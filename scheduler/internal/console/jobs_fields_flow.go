package console

import (
	"strconv"

	"github.com/jetjob/jetjob/scheduler/apiv1"
)

// Fields of issue #33 (flow controls: docs/flow-control.md), in a section
// of their own on the job page and in the form's Advanced section.

const secFlow = "Flow control"

var flowFields = []jobField{
	{Name: "priority", Label: "Priority", Section: secFlow, Kind: "number", keys: []string{"priority"},
		Hint: "-100 to 100: runs waiting at the group's or the key's cap start highest first (default 0).",
		get:  func(s *apiv1.JobSpec) string { return strconv.Itoa(s.Priority) }, set: setInt(func(s *apiv1.JobSpec) *int { return &s.Priority })},
	{Name: "concurrency_key", Label: "Concurrency key", Section: secFlow, Kind: "text", keys: []string{"concurrency_key"},
		Hint: `params or params.<field>, e.g. "params.tenant": runs with the same value share the key's cap and rate limit; empty for none.`,
		get:  func(s *apiv1.JobSpec) string { return s.ConcurrencyKey }, set: setString(func(s *apiv1.JobSpec) *string { return &s.ConcurrencyKey })},
	{Name: "key_cap", Label: "Runs per key", Section: secFlow, Kind: "number", keys: []string{"key_cap"},
		Hint: "At most this many runs with the same key at once across the group; 0 for no cap.",
		get:  func(s *apiv1.JobSpec) string { return strconv.Itoa(s.KeyCap) }, set: setInt(func(s *apiv1.JobSpec) *int { return &s.KeyCap })},
	{Name: "rate_limit", Label: "Rate limit", Section: secFlow, Kind: "text", keys: []string{"rate_limit"},
		Hint: `At most COUNT starts per PERIOD, e.g. "100/1m"; empty for none.`,
		get:  func(s *apiv1.JobSpec) string { return s.RateLimit }, set: setString(func(s *apiv1.JobSpec) *string { return &s.RateLimit })},
	{Name: "key_rate_limit", Label: "Rate limit per key", Section: secFlow, Kind: "text", keys: []string{"key_rate_limit"},
		Hint: `With a concurrency key: at most COUNT starts per key per PERIOD, e.g. "5/1s"; empty for none.`,
		get:  func(s *apiv1.JobSpec) string { return s.KeyRateLimit }, set: setString(func(s *apiv1.JobSpec) *string { return &s.KeyRateLimit })},
}
