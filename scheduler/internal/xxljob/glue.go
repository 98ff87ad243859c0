package xxljob

import (
	"encoding/json"
	"fmt"
	"strings"
)

// glueScript is how xxl-job runs a script glue: its executor writes
// glue_source to a file with the language's suffix and runs
// `<interpreter> <file> <executor_param> <shard index> <shard total>`
// (ScriptJobHandler). jetjob's shell handler can do exactly that, so the
// import maps these glue types to it instead of refusing them: the script
// travels in the job's params and is written to a fresh temporary
// directory per run, then run with the same interpreter and the same three
// arguments. Only GLUE_GROOVY (Java compiled inside xxl-job's JVM executor)
// has no faithful equivalent.
type glueScript struct {
	Interpreter string // as xxl-job's GlueTypeEnum names it
	Suffix      string
}

// glueScripts are the script glue types with the interpreter xxl-job's
// GlueTypeEnum runs each with: GLUE(Python3) is python3 and GLUE(Python2)
// python; GLUE_PWSH (PowerShell 7, an admin's addition in some 3.x
// deployments) is pwsh.
var glueScripts = map[string]glueScript{
	"GLUE_SHELL":      {"bash", ".sh"},
	"GLUE_PYTHON":     {"python3", ".py"},
	"GLUE_PYTHON2":    {"python", ".py"},
	"GLUE_PHP":        {"php", ".php"},
	"GLUE_NODEJS":     {"node", ".js"},
	"GLUE_POWERSHELL": {"powershell", ".ps1"},
	"GLUE_PWSH":       {"pwsh", ".ps1"},
}

// Names of the environment variables that carry the script and the param
// to the runner; the shell handler adds JETJOB_SHARD_INDEX/TOTAL itself.
const (
	envGlueSource = "XXL_JOB_GLUE_SOURCE"
	envGlueParam  = "XXL_JOB_PARAM"
)

// glueRunner is the sh script the shell handler runs for a script glue.
// The temporary directory is removed on exit and on SIGTERM (a timeout or
// kill stops the whole process group with SIGTERM first), and the
// interpreter's exit status is the run's.
const glueRunner = `d=$(mktemp -d "${TMPDIR:-/tmp}/xxl-glue.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
trap 'exit 143' TERM INT
printf '%%s' "$` + envGlueSource + `" > "$d/script%s"
%s "$d/script%s" "$` + envGlueParam + `" "$JETJOB_SHARD_INDEX" "$JETJOB_SHARD_TOTAL"`

// shellParams is the JSON form of the shell handler's params
// (worker/builtin.Shell).
type shellParams struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// glueParams returns the shell handler's params that run source like
// xxl-job's executor ran it.
func glueParams(g glueScript, source, param string) string {
	p := shellParams{
		Command: "/bin/sh",
		Args:    []string{"-c", fmt.Sprintf(glueRunner, g.Suffix, g.Interpreter, g.Suffix)},
		Env:     map[string]string{envGlueSource: source, envGlueParam: param},
	}
	// Scripts are full of <, > and &: keep them readable in the params.
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		panic(err) // strings only: cannot fail
	}
	return strings.TrimSuffix(b.String(), "\n")
}
