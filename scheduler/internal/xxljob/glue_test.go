package xxljob

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runGlue runs params the way the shell handler runs a JSON command, with
// the shard variables it sets, and returns the output and exit code.
func runGlue(t *testing.T, params string, tmp string) (string, int) {
	t.Helper()
	var p shellParams
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(p.Command, p.Args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "JETJOB_SHARD_INDEX=1", "JETJOB_SHARD_TOTAL=3")
	for k, v := range p.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// A GLUE(Shell) script runs under bash with xxl-job's arguments (param,
// shard index, shard total), its exit status is the run's, and its
// temporary file is gone afterwards.
func TestGlueShellRunsLikeXXLJob(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("bash is needed: GLUE(Shell) scripts run under it, as in xxl-job")
	}
	tmp := t.TempDir()
	src := "#!/bin/bash\necho \"param <$1> shard $2/$3 in ${BASH_VERSION:+bash}\"\n[[ $0 == *.sh ]] && echo suffix ok\nexit 7\n"
	out, code := runGlue(t, glueParams(glueScripts["GLUE_SHELL"], src, "it's \"quoted\" & <odd>"), tmp)
	if code != 7 {
		t.Errorf("exit code %d, want the script's 7; output %q", code, out)
	}
	want := "param <it's \"quoted\" & <odd>> shard 1/3 in bash\nsuffix ok\n"
	if out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	if !strings.Contains(glueParams(glueScripts["GLUE_PYTHON"], "print(1)", ""), `python3 \"$d/script.py\"`) {
		t.Error("GLUE(Python3) glue does not run python3 on a .py file")
	}
	if !strings.Contains(glueParams(glueScripts["GLUE_PYTHON2"], "print 1", ""), `python \"$d/script.py\"`) {
		t.Error("GLUE(Python2) glue does not run python on a .py file")
	}
}
