package builtin

import (
	"errors"
	"os/exec"

	"golang.org/x/sys/unix"
)

// watchExit returns a channel closed once the started command has exited,
// and reap, which collects its status (cmd.Wait). The process is not reaped
// before reap is called (waitid with WNOWAIT): until then its pid, which is
// also its process group's id, cannot be reused, so signalling the group
// can never hit an unrelated process.
func watchExit(cmd *exec.Cmd) (exited <-chan struct{}, reap func() error) {
	ch := make(chan struct{})
	pid := cmd.Process.Pid
	go func() {
		defer close(ch)
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if !errors.Is(err, unix.EINTR) {
				return
			}
		}
	}()
	return ch, cmd.Wait
}
