package main

import (
	"fmt"
	"runtime"
)

// The scheduler's spare P (issue 23). Under --sync always the commit log's committer spends most
// of a busy server's time inside fdatasync (a 2 vCPU VM: ~0.5 ms a sync, back to back under a
// closed-loop consume), and a goroutine in a system call keeps its P until the runtime's sysmon
// takes it back, no sooner than 20 µs and only after it has looked twice. With as many Ps as
// CPUs, a handler that becomes runnable meanwhile waits for that hand-off or for the other P,
// and every hand-off restarts sysmon's 20 µs polling and moves Ms between Ps (futex wake-ups,
// context switches, which this VM makes dear). One P more than the CPUs lets the request
// handlers keep every CPU while the committer, or the flush pass, sits in a sync. Measured in
// docs/benchmarks.md ("Issue 23: consume path").

// serveProcs is the GOMAXPROCS comb serve runs with: flag when it is above zero, else the
// runtime's own count (from the CPUs, the CPU affinity mask and a cgroup quota) plus one. envSet
// says GOMAXPROCS is in the environment: the operator's value is kept as it is (0 returned:
// nothing to change), unless the flag names one.
func serveProcs(flag, runtimeProcs int, envSet bool) int {
	switch {
	case flag > 0:
		return flag
	case envSet:
		return 0
	default:
		return runtimeProcs + 1
	}
}

// checkProcs validates --gomaxprocs.
func checkProcs(n int) string {
	if n < 0 {
		return fmt.Sprintf("--gomaxprocs %d: want 0 (the CPUs plus one) or a count of Ps", n)
	}
	return ""
}

// applyProcs sets GOMAXPROCS as serveProcs decides and returns the value in force. Setting it
// turns off the runtime's periodic update from a changed cgroup quota (Go 1.25): a quota
// changed while the server runs takes a restart.
func applyProcs(flag int, envSet bool) int {
	if n := serveProcs(flag, runtime.GOMAXPROCS(0), envSet); n > 0 {
		runtime.GOMAXPROCS(n)
	}
	return runtime.GOMAXPROCS(0)
}
