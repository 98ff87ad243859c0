// Package tuning checks the values of the components' Config structs: what
// an operator tunes. Most are durations and sizes where 0 picks the
// default and a negative value is a mistake; each component names the
// field and the default, and this package says it the same way for all.
package tuning

import "fmt"

// NotNegative returns an error naming component's field when v is
// negative: "dispatch: FlushSize must be ≥ 0 (0: 2000), got -1". def is
// what 0 means, "" to leave the parenthesis out.
func NotNegative[T ~int | ~int64](component, field string, v T, def string) error {
	if v >= 0 {
		return nil
	}
	if def != "" {
		def = " (0: " + def + ")"
	}
	return fmt.Errorf("%s: %s must be ≥ 0%s, got %v", component, field, def, v)
}
