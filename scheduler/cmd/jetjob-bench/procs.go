package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// child is a subprocess of the orchestrator: this binary re-executed with a
// hidden subcommand.
type child struct {
	role    string
	cmd     *exec.Cmd
	info    string // what followed READY
	logPath string
	done    chan struct{}
	err     error
}

// startChild runs `self sub args...`, sends its stderr (and stdout after
// READY) to logPath, and waits up to timeout for its READY line.
func startChild(role, logPath string, timeout time.Duration, sub string, args ...string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return startProgram(role, logPath, timeout, self, append([]string{sub}, args...)...)
}

// startProgram is startChild for another program that speaks the same
// READY protocol (the River baseline, river.go).
func startProgram(role, logPath string, timeout time.Duration, path string, args ...string) (*child, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Stderr = logf
	// If the orchestrator dies, its children die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	c := &child{role: role, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			if !sent && strings.HasPrefix(line, "READY") {
				ready <- strings.TrimSpace(strings.TrimPrefix(line, "READY"))
				sent = true
				continue
			}
			fmt.Fprintln(logf, line)
		}
		_, _ = io.Copy(logf, out)
		c.err = cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	select {
	case c.info = <-ready:
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("%s exited before it was ready (%v); log %s:\n%s", role, c.err, logPath, tail(logPath, 20))
	case <-time.After(timeout):
		c.stop(5 * time.Second)
		return nil, fmt.Errorf("%s not ready within %s; log %s:\n%s", role, timeout, logPath, tail(logPath, 20))
	}
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// stop sends SIGTERM and waits up to grace, then kills.
func (c *child) stop(grace time.Duration) error {
	select {
	case <-c.done:
		return c.exitErr()
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return c.exitErr()
	case <-time.After(grace):
	}
	_ = c.cmd.Process.Kill()
	<-c.done
	return fmt.Errorf("%s did not stop within %s: killed", c.role, grace)
}

func (c *child) exitErr() error {
	if c.err != nil {
		return fmt.Errorf("%s: %w; log %s:\n%s", c.role, c.err, c.logPath, tail(c.logPath, 10))
	}
	return nil
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// clockTick is USER_HZ, 100 on every Linux architecture Go supports.
const clockTick = 100

// procSample is a process's CPU time and peak RSS.
type procSample struct {
	cpu      float64 // utime+stime, seconds
	childCPU float64 // cutime+cstime: exited, waited-for children
	hwmKB    int64
	ppid     int
	ok       bool
}

func readProc(pid int) procSample {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}
	}
	// comm may contain spaces and parentheses: fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procSample{}
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14 → f[11].
	if len(f) < 15 {
		return procSample{}
	}
	num := func(k int) float64 { v, _ := strconv.ParseFloat(f[k], 64); return v }
	ppid, _ := strconv.Atoi(f[1])
	s := procSample{
		cpu: (num(11) + num(12)) / clockTick, childCPU: (num(13) + num(14)) / clockTick, ppid: ppid, ok: true,
	}
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, line := range strings.Split(string(st), "\n") {
			if strings.HasPrefix(line, "VmHWM:") {
				s.hwmKB, _ = strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			}
		}
	}
	return s
}

// children lists the pids whose parent is pid.
func children(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s := readProc(p); s.ok && s.ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

// roleSample is a role's summed CPU (seconds) and peak RSS (KB).
type roleSample struct {
	pids  []int
	cpu   float64
	hwmKB int64
}

// sampleRole reads pid; with tree, its children too (and the CPU time of
// its exited children), as for the postmaster.
func sampleRole(pid int, tree bool) roleSample {
	s := readProc(pid)
	r := roleSample{pids: []int{pid}, cpu: s.cpu, hwmKB: s.hwmKB}
	if tree {
		r.cpu += s.childCPU
		for _, c := range children(pid) {
			cs := readProc(c)
			r.pids = append(r.pids, c)
			r.cpu += cs.cpu
			r.hwmKB += cs.hwmKB
		}
	}
	return r
}

func postmasterPID(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return 0, errors.New("postmaster.pid: no pid")
	}
	return pid, nil
}

// hostTicks reads the machine's busy and total CPU time (seconds, summed
// over cores) from /proc/stat.
func hostTicks() (busy, total float64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0
	}
	v := make([]float64, 8)
	for i := range v {
		v[i], _ = strconv.ParseFloat(f[i+1], 64)
	}
	// user nice system idle iowait irq softirq steal (guest is in user)
	busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
	return busy / clockTick, (busy + v[3] + v[4]) / clockTick
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
