package wire

import (
	"fmt"
	"regexp"
)

// MaxHandlerName is the longest handler name ValidHandler accepts.
const MaxHandlerName = 128

// handlerRE is the one pattern of handler names: a letter, then letters,
// digits, '_', '.' and '-'. Mixed case is allowed because jobs imported
// from xxl-job keep their executor handlers' bean names
// ("demoJobHandler"); dots allow a namespace ("billing.invoice").
var handlerRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,127}$`)

// ValidHandler reports whether s is a valid handler name. A handler name
// is shown in the console and the CLI, labels metrics and may decide
// permissions (a group's command handlers need scripts), so it admits no
// spaces, control or formatting characters, slashes or look-alikes: what
// is displayed is what is stored. The API checks it where a job or a group
// names a handler, and the worker where a handler is registered; the
// messages between them keep their looser length limits so that jobs
// stored before the pattern still reach a worker.
func ValidHandler(s string) bool { return handlerRE.MatchString(s) }

// CheckHandler returns a clear error when s is not a valid handler name.
func CheckHandler(s string) error {
	if !ValidHandler(s) {
		return fmt.Errorf("handler name %q: want a letter, then up to %d of A-Z a-z 0-9 _ . -", s, MaxHandlerName-1)
	}
	return nil
}
