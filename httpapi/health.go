package httpapi

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/broker"
)

// health serves GET /health (spec 8.1): 200 healthy, 503 when storage is unavailable. Clients
// read only `status`; the other fields keep Queen's shape, and these are added when something
// is wrong (issue 10):
//
//   - Cursor checkpoints failing (a full disk): 200, status "degraded", "reason" (the error)
//     and "checkpoint":{"error","since","retrying":true,"action"}. Pops, acks, lease extensions,
//     seeks and transactions answer 5xx and claim nothing meanwhile; the broker retries by itself
//     and answers "healthy" again after the first good checkpoint once space is freed.
//   - A failed write or fdatasync of the commit log under checkpoints: 503 "unhealthy", the same fields with
//     "retrying":false; only a restart brings consumption back.
//   - Writes failing for want of disk space (ENOSPC, EDQUOT; issue 21): 200 "degraded",
//     "reason" and "diskFull":{"error","since","action"} from the failed write until the next
//     append or flush pass that succeeds. Nothing is listed under "damaged" for it.
//   - Partitions out of service because their logs are damaged: the server still serves the
//     rest: 200 "degraded" and the partitions under "damaged" (queue, partition, partitionId,
//     the segment file's base name, byte range and offsets; the server log has the full path;
//     `comb fsck` repairs).
//
// A node of a replicated cluster (issue 15) adds "role" ("leader" | "follower") and "leader"
// ({"id","raftAddr","httpAddr"}, null while none is known; httpAddr, where followers forward
// to, is null until the leader's announcement reached this node) and "appliedLSN"; while it
// knows no leader (an election, a node waiting to be added or removed from the cluster) it says
// 200 "degraded" with a "reason": its writes answer 503 meanwhile. A single node adds nothing.
//
// Error texts have their directories cut to base names, as 500 bodies do.
func (s *Server) health(ctx *fasthttp.RequestCtx) {
	status, db, code := "healthy", "connected", fasthttp.StatusOK
	var damaged []broker.DamagedPartition
	ckpt, failing := s.b.CheckpointFailure()
	switch {
	case !s.b.Healthy():
		status, db, code = "unhealthy", "disconnected", fasthttp.StatusServiceUnavailable
	case failing:
		status = "degraded"
	}
	if code == fasthttp.StatusOK {
		if damaged = s.b.Damaged(); len(damaged) > 0 {
			status = "degraded"
		}
	}
	nospace, diskFull := s.b.NoSpace()
	if diskFull && code == fasthttp.StatusOK {
		status = "degraded"
	}
	rs, replicated := s.b.Replication()
	noLeader := replicated && rs.LeaderID == "" && code == fasthttp.StatusOK && !failing
	if noLeader {
		status = "degraded" // writes answer 503 until a leader is known (a load balancer should look elsewhere)
	}
	p := getBuf()
	b := append(*p, `{"status":`...)
	b = appendString(b, status)
	b = append(b, `,"database":`...)
	b = appendString(b, db)
	b = append(b, `,"server":"comb","worker_id":0,"version":`...)
	b = appendString(b, s.cfg.Version)
	b = append(b, `,"shared_state":{},"queen":{"worker_id":0,"status":"active"}`...)
	if replicated {
		b = appendReplication(b, rs, s.leaderHTTPAddr(rs.LeaderID))
	}
	if noLeader {
		b = append(b, `,"reason":"no cluster leader known: an election is under way, or this node is not (yet) a member of the cluster"`...)
	}
	if failing {
		b = appendCheckpointFailure(b, ckpt)
	}
	if diskFull {
		b = appendDiskFull(b, nospace, !failing && !noLeader)
	}
	if len(damaged) > 0 {
		b = appendDamaged(b, damaged)
	}
	*p = append(b, '}')
	sendJSON(ctx, code, p)
}

// leaderHTTPAddr is the HTTP address leader announced, as this node knows it; "" when unknown.
func (s *Server) leaderHTTPAddr(leader string) string {
	if s.fwd == nil || leader == "" {
		return ""
	}
	if id, addr := s.fwd.cluster.LeaderHTTP(); id == leader {
		return addr
	}
	return ""
}

func appendReplication(b []byte, rs broker.ReplicationStatus, httpAddr string) []byte {
	b = append(b, `,"role":`...)
	b = appendString(b, rs.Role)
	b = append(b, `,"leader":`...)
	if rs.LeaderID == "" {
		b = append(b, `null`...)
	} else {
		b = append(b, `{"id":`...)
		b = appendString(b, rs.LeaderID)
		b = append(b, `,"raftAddr":`...)
		b = appendString(b, rs.LeaderAddr)
		b = append(b, `,"httpAddr":`...)
		if httpAddr == "" {
			b = append(b, `null`...)
		} else {
			b = appendString(b, httpAddr)
		}
		b = append(b, '}')
	}
	b = append(b, `,"appliedLSN":`...)
	return strconv.AppendUint(b, rs.AppliedLSN, 10)
}

func appendCheckpointFailure(b []byte, f broker.CheckpointFailure) []byte {
	msg := redactPaths(f.Reason)
	b = append(b, `,"reason":`...)
	b = appendString(b, "cursor checkpoints failing: "+msg)
	b = append(b, `,"checkpoint":{"error":`...)
	b = appendString(b, msg)
	b = append(b, `,"since":`...)
	b = appendTimeMicros(b, f.SinceMicros, 3)
	b = append(b, `,"retrying":`...)
	b = appendBool(b, !f.Sticky)
	b = append(b, `,"action":`...)
	if f.Sticky {
		b = appendString(b, "check the disk, then restart the server")
	} else {
		b = appendString(b, "free disk space; the server retries by itself")
	}
	return append(b, '}')
}

// appendDiskFull adds "diskFull":{"error","since","action"} (and the "reason" when no other
// state gave one): a full disk is a state the broker leaves by itself, never damage.
func appendDiskFull(b []byte, st broker.NoSpaceState, withReason bool) []byte {
	msg := redactPaths(st.Reason)
	if withReason {
		b = append(b, `,"reason":`...)
		b = appendString(b, "disk full: "+msg)
	}
	b = append(b, `,"diskFull":{"error":`...)
	b = appendString(b, msg)
	b = append(b, `,"since":`...)
	b = appendTimeMicros(b, st.SinceMicros, 3)
	b = append(b, `,"action":"free disk space; writes resume by themselves, no restart needed"}`...)
	return b
}

func appendDamaged(b []byte, damaged []broker.DamagedPartition) []byte {
	b = append(b, `,"damaged":[`...)
	for i := range damaged {
		d := &damaged[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"queue":`...)
		b = appendString(b, d.Queue)
		b = append(b, `,"partition":`...)
		b = appendString(b, d.Partition)
		b = append(b, `,"partitionId":`...)
		b = appendString(b, d.PartitionID)
		b = append(b, `,"file":`...)
		b = appendString(b, d.File)
		b = append(b, `,"startByte":`...)
		b = appendInt(b, d.StartByte)
		b = append(b, `,"endByte":`...)
		b = appendInt(b, d.EndByte)
		b = append(b, `,"firstOffset":`...)
		b = strconv.AppendUint(b, d.FirstOffset, 10)
		b = append(b, `,"lastOffset":`...)
		b = strconv.AppendUint(b, d.LastOffset, 10)
		b = append(b, `,"since":`...)
		b = appendTimeMicros(b, d.SinceMicros, 3)
		b = append(b, `,"action":"run comb fsck"}`...)
	}
	return append(b, ']')
}

// metricsJSON serves GET /metrics (spec 8.2): Queen's JSON shape. Requests count every HTTP
// request; messages count pushed messages; rates are per second over the process's uptime.
// The database block has no meaning for comb and stays 0, as Queen mostly leaves it.
func (s *Server) metricsJSON(ctx *fasthttp.RequestCtx) {
	uptime := time.Since(s.start).Seconds()
	st := s.rep.Stats()
	reqs := s.requests.Load()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	userMicros, sysMicros := cpuMicros()

	p := getBuf()
	b := append(*p, `{"uptime":`...)
	b = strconv.AppendFloat(b, uptime, 'f', 3, 64)
	b = append(b, `,"requests":{"total":`...)
	b = strconv.AppendUint(b, reqs, 10)
	b = append(b, `,"rate":`...)
	b = strconv.AppendFloat(b, rate(reqs, uptime), 'f', 3, 64)
	b = append(b, `},"messages":{"total":`...)
	b = strconv.AppendUint(b, st.PushMessages, 10)
	b = append(b, `,"rate":`...)
	b = strconv.AppendFloat(b, rate(st.PushMessages, uptime), 'f', 3, 64)
	b = append(b, `},"database":{"poolSize":0,"idleConnections":0,"waitingRequests":0},"memory":{"rss":`...)
	b = strconv.AppendUint(b, rssBytes(ms.Sys), 10)
	b = append(b, `,"heapTotal":`...)
	b = strconv.AppendUint(b, ms.HeapSys, 10)
	b = append(b, `,"heapUsed":`...)
	b = strconv.AppendUint(b, ms.HeapAlloc, 10)
	b = append(b, `,"external":0,"arrayBuffers":0},"cpu":{"user":`...)
	b = appendInt(b, userMicros)
	b = append(b, `,"system":`...)
	b = appendInt(b, sysMicros)
	*p = append(b, '}', '}')
	sendJSON(ctx, fasthttp.StatusOK, p)
}

func rate(n uint64, seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(n) / seconds
}

// cpuMicros is the process's user and system CPU time in µs (Node's process.cpuUsage units).
func cpuMicros() (user, system int64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return ru.Utime.Sec*1e6 + int64(ru.Utime.Usec), ru.Stime.Sec*1e6 + int64(ru.Stime.Usec)
}

// rssBytes reads the resident set size from /proc/self/statm; elsewhere it falls back to the
// memory the Go runtime obtained from the OS.
func rssBytes(fallback uint64) uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return fallback
	}
	fields := strings.Fields(string(data))
	if len(fields) < 2 {
		return fallback
	}
	pages, err := strconv.ParseUint(fields[1], 10, 64)
	if err != nil {
		return fallback
	}
	return pages * uint64(os.Getpagesize())
}
