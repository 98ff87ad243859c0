package builtin

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// decodeParams decodes a job's params, one JSON object, into p, strictly:
// an unknown field or anything after the object is an error. A misspelt
// key ("comand", "expect_statuses") must fail the run with its name, not
// be ignored while the handler does something else than meant.
func decodeParams(params string, p any) error {
	dec := json.NewDecoder(strings.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the object")
	}
	return nil
}
