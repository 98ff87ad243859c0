//go:build !linux

package secretenv

// Start moves nothing where it is not Linux: it returns the program's
// environment and command line as they are.
func Start(Policy) (*Moved, error) { return &Moved{Env: map[string]string{}}, nil }
