package refs_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/jetjob/jetjob/scheduler/internal/auth"
	"github.com/jetjob/jetjob/scheduler/internal/refs"
)

// Adding a reference to a secret needs operator with scripts on the job's
// group, and the secret must be the group's; keeping one (an edit that
// does not add it) needs only that it still exists.
func TestCheckSecrets(t *testing.T) {
	p := &auth.Principal{Name: "op", Grants: map[string]auth.Grant{
		"s": {Role: auth.Operator, Scripts: true}, "a": {Role: auth.Operator}, "v": {Role: auth.Viewer, Scripts: true}}}
	has := func(names ...string) func(string) bool {
		return func(n string) bool { return slices.Contains(names, n) }
	}
	for _, c := range []struct {
		name       string
		group      string
		cur, names []string
		exists     func(string) bool
		want       error
	}{
		{"scripts operator adds", "s", nil, []string{"db"}, has("db"), nil},
		{"missing secret", "s", nil, []string{"db", "nope"}, has("db"), refs.ErrNoSecret},
		{"operator without scripts adds", "a", nil, []string{"db"}, has("db"), refs.ErrSecretRefused},
		{"operator without scripts keeps", "a", []string{"db"}, []string{"db"}, has("db"), nil},
		{"kept but deleted since", "a", []string{"db"}, []string{"db"}, has(), refs.ErrNoSecret},
		{"viewer adds", "v", nil, []string{"db"}, has("db"), refs.ErrSecretRefused},
	} {
		err := refs.CheckSecrets(refs.Of(p), c.group, c.cur, c.names, c.exists)
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
