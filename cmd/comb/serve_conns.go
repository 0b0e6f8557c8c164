package main

import (
	"github.com/combmq/comb/broker"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// The connection cap of `comb serve --max-conns` (issue 10, "running out of file descriptors"):
// connections, the broker's partition files and everything else must fit under RLIMIT_NOFILE
// together, or a connection flood starves the broker of the descriptors it needs to open a log.
const (
	// connReserve is the descriptors left for what is neither a connection nor a partition
	// file: stdio, the listener, the runtime's poller, the lock file, the metadata and cursor
	// journals and their snapshot files, DLQ reads, the pprof listener, and the refusals being
	// answered (httpapi's maxRefusing, 16).
	connReserve = 64
	// maxDefaultConns bounds the derived default when the limit is large (Go raises the soft
	// limit to the hard one at start, often 2^20): an idle keep-alive connection costs ~19 KiB
	// of memory (goroutine stack and read buffer; measured in docs/operations.md), so 10,000 are
	// ~200 MiB. A larger cap must be asked for.
	maxDefaultConns = 10000
)

// nofileLimit is the process's soft RLIMIT_NOFILE; 0 when unknown or unlimited.
func nofileLimit() uint64 {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY {
		return 0
	}
	return rl.Cur
}

// connRoom is how many connections fit under nofile descriptors next to the partition file
// budget (broker.FileBudget; half the limit when there is no cap, maxOpenFiles < 0) and
// connReserve; at least 1. nofile 0 means unknown: no bound.
func connRoom(nofile uint64, maxOpenFiles int) int {
	if nofile == 0 {
		return int(^uint(0) >> 1)
	}
	files := nofile / 2 // no cap: the handles a busy broker may hold are assumed to be half
	if budget := broker.FileBudget(maxOpenFiles, nofile); budget >= 0 {
		files = uint64(budget)
	}
	if nofile <= files+connReserve {
		return 1
	}
	return int(min(nofile-files-connReserve, uint64(int(^uint(0)>>1))))
}

// resolveMaxConns turns the --max-conns flag into httpapi.Config.MaxConns: 0 derives the cap
// from the limit (at most maxDefaultConns), a positive value is lowered to the room with a
// warning, a negative one means no cap (returned as 0).
func resolveMaxConns(flagValue, maxOpenFiles int, nofile uint64, log zerolog.Logger) int {
	room := connRoom(nofile, maxOpenFiles)
	switch {
	case flagValue < 0:
		return 0
	case flagValue == 0:
		return min(room, maxDefaultConns)
	case flagValue > room:
		log.Warn().Int("maxConns", flagValue).Uint64("rlimitNofile", nofile).Int("maxOpenFiles", maxOpenFiles).Int("using", room).
			Msg("max conns does not fit in the process's file limit next to the partition files; lowering it")
		return room
	}
	return flagValue
}
