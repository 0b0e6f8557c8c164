//go:build crash

package crashtest

import "syscall"

var sigterm = syscall.SIGTERM
