package main

import (
	"os"
	"syscall"

	"github.com/rs/zerolog"
)

// restartProcess replaces this process with a new run of the same binary,
// arguments and environment (execve: same pid, so a supervisor, a test
// harness or `go run` sees one process). A replicated node that lost its
// leadership with writes in flight does this once its broker is closed:
// its memory may hold effects that never committed, and a start recovers
// exactly the committed state from its files and raft's log
// (docs/replication.md, "A deposed leader"). It returns only when the exec
// fails, with the exit status to use (a supervisor then restarts comb).
func restartProcess(log zerolog.Logger) int {
	exe, err := os.Executable()
	if err == nil {
		log.Warn().Str("exe", exe).Msg("restarting the process to recover the committed state")
		err = syscall.Exec(exe, os.Args, os.Environ())
	}
	log.Error().Err(err).Msg("cannot restart the process; exiting (start comb again to recover)")
	return 1
}
