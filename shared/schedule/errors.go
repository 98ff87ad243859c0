package schedule

import (
	"errors"
	"fmt"
)

// ErrInvalid is wrapped by every error Parse returns, so that callers can
// tell bad user input (errors.Is(err, ErrInvalid): HTTP 400) from anything
// else without matching on text.
var ErrInvalid = errors.New("invalid schedule")

// invalidError is a validation error. Its text names the offending input and
// what was expected; it unwraps to ErrInvalid and, when there is one, to the
// underlying error (e.g. the time package's), which callers may inspect.
type invalidError struct {
	msg   string
	cause error
}

func (e *invalidError) Error() string { return e.msg }

func (e *invalidError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrInvalid}
	}
	return []error{ErrInvalid, e.cause}
}

// invalidf builds a validation error; cause may be nil.
func invalidf(cause error, format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...), cause: cause}
}
