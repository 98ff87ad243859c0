// Package labels is what a job's labels are and how a selector picks jobs
// by them: labels are key=value pairs a team puts on its jobs (env=prod,
// team=billing); a selector "env=prod,team=billing" matches the jobs that
// carry every pair. One grammar, read by the API's listing and bulk
// operations, the CLI's -l and the console's filter.
package labels

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// ErrInvalid marks labels or a selector refused as input (HTTP 400).
var ErrInvalid = errors.New("invalid labels")

// MaxLabels bounds a job's labels and a selector's pairs.
const MaxLabels = 32

var (
	keyPattern   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]{0,61}[A-Za-z0-9])?$`)
	valuePattern = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$`)
)

// Check validates a job's labels: at most MaxLabels; keys of 1 to 63
// letters, digits, ".", "_", "/", "-" that begin and end with a letter or
// digit; values the same without "/", or empty.
func Check(l map[string]string) error {
	if len(l) > MaxLabels {
		return fmt.Errorf("%w: %d labels, at most %d", ErrInvalid, len(l), MaxLabels)
	}
	for _, k := range sortedKeys(l) {
		if err := checkPair(k, l[k]); err != nil {
			return err
		}
	}
	return nil
}

func checkPair(k, v string) error {
	if !keyPattern.MatchString(k) {
		return fmt.Errorf("%w: key %q: want 1 to 63 letters, digits, '.', '_', '/' or '-', starting and ending with a letter or digit", ErrInvalid, k)
	}
	if !valuePattern.MatchString(v) {
		return fmt.Errorf("%w: %s=%q: a value is up to 63 letters, digits, '.', '_' or '-', starting and ending with a letter or digit", ErrInvalid, k, v)
	}
	return nil
}

// ParseSelector reads "k=v,k2=v2" (spaces around pairs ignored) into the
// pairs a job must all carry. "" selects every job (an empty map).
func ParseSelector(sel string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(sel) == "" {
		return out, nil
	}
	for _, p := range strings.Split(sel, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok {
			return nil, fmt.Errorf("%w: selector %q: want key=value pairs separated by commas, e.g. env=prod,team=billing", ErrInvalid, sel)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if err := checkPair(k, v); err != nil {
			return nil, err
		}
		if old, dup := out[k]; dup && old != v {
			return nil, fmt.Errorf("%w: selector %q asks %s to be both %q and %q", ErrInvalid, sel, k, old, v)
		}
		out[k] = v
	}
	if len(out) > MaxLabels {
		return nil, fmt.Errorf("%w: selector with %d pairs, at most %d", ErrInvalid, len(out), MaxLabels)
	}
	return out, nil
}

// Format writes labels as a selector would: "k=v,k2=v2", keys sorted.
func Format(l map[string]string) string {
	pairs := make([]string, 0, len(l))
	for _, k := range sortedKeys(l) {
		pairs = append(pairs, k+"="+l[k])
	}
	return strings.Join(pairs, ",")
}

func sortedKeys(l map[string]string) []string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
