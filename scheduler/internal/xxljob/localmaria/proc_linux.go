package localmaria

import "syscall"

// procAttr makes the kernel kill mariadbd when the test process dies
// without running its cleanups (a panic, a timeout's SIGQUIT), so that no
// server outlives its test.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
