package xxljob

// glueScript is how xxl-job runs a script glue: its executor writes
// glue_source to a file with the language's suffix and runs
// `<interpreter> <file> <executor_param> <shard index> <shard total>`
// (ScriptJobHandler). jetjob's script jobs run exactly so (the drop-in
// worker's script handler), so the import maps these glue types to script
// jobs, the source stored with its versions (glueLanguages). Only
// GLUE_GROOVY (Java compiled inside xxl-job's JVM executor) has no
// faithful equivalent.
type glueScript struct {
	Interpreter string // as xxl-job's GlueTypeEnum names it
	Suffix      string
}

// glueScripts are the script glue types with the interpreter jetjob's
// script handler runs each with, xxl-job's GlueTypeEnum's but for
// GLUE(Python2), which xxl-job runs as python and jetjob as python2 (python
// is Python 3 on current systems); GLUE_PWSH (PowerShell 7, an admin's
// addition in some 3.x deployments) is pwsh.
var glueScripts = map[string]glueScript{
	"GLUE_SHELL":      {"bash", ".sh"},
	"GLUE_PYTHON":     {"python3", ".py"},
	"GLUE_PYTHON2":    {"python2", ".py"},
	"GLUE_PHP":        {"php", ".php"},
	"GLUE_NODEJS":     {"node", ".js"},
	"GLUE_POWERSHELL": {"powershell", ".ps1"},
	"GLUE_PWSH":       {"pwsh", ".ps1"},
}

// scriptHandler is jetjob's handler of script jobs.
const scriptHandler = "script"
