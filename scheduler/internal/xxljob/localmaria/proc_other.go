//go:build !linux

package localmaria

import "syscall"

// procAttr: only Linux can tie the server's life to the test process.
func procAttr() *syscall.SysProcAttr { return nil }
