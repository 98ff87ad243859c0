//go:build unix && !linux

package builtin

import "os/exec"

// watchExit returns a channel closed once the started command has exited,
// and reap, which returns its status. Without waitid(WNOWAIT) the process is
// reaped as it exits, so a signal to its group sent afterwards relies on the
// group id not having been reused in between, as unlikely as that is.
func watchExit(cmd *exec.Cmd) (exited <-chan struct{}, reap func() error) {
	ch := make(chan struct{})
	var err error
	go func() {
		err = cmd.Wait()
		close(ch)
	}()
	return ch, func() error {
		<-ch
		return err
	}
}
