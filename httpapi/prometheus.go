package httpapi

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/broker"
)

// metricsPrometheus serves GET /metrics/prometheus (spec 8.3) in text exposition format 0.0.4,
// written by hand (a dozen families do not justify a client library). Cluster-wide series carry
// scope="cluster" as Queen's do; comb-specific families are prefixed comb_.
//
// comb_sync_latency_seconds is the broker's cumulative histogram (Stats.SyncLatency): its
// buckets, sum and count only grow, whoever else scrapes.
func (s *Server) metricsPrometheus(ctx *fasthttp.RequestCtx) {
	st := s.b.Stats()
	p := getBuf()
	w := promWriter{b: *p}

	w.family("queen_uptime_seconds", "gauge", "Seconds since the server started.")
	w.sampleFloat("queen_uptime_seconds", "", time.Since(s.start).Seconds())
	w.counter("queen_cluster_push_requests_total", "POST /api/v1/push requests received, whatever their outcome (400 and 500 included).", s.pushRequests.Load())
	w.counter("queen_cluster_push_messages_total", "Messages stored by pushes (duplicates and rejected requests excluded).", st.PushMessages)
	w.counter("queen_cluster_pop_requests_total", "Pop requests received on all three pop routes, whatever their outcome (204, 400 and 500 included).", s.popRequests.Load())
	w.counter("queen_cluster_pop_messages_total", "Messages delivered by pops.", st.PopMessages)
	w.counter("queen_cluster_ack_requests_total", "POST /api/v1/ack and /ack/batch requests received, whatever their outcome (400 and 500 included).", s.ackRequests.Load())
	w.counter("queen_cluster_ack_messages_total", "Acknowledgement items of ack requests that reached the broker.", st.AckMessages)
	w.family("queen_cluster_ack_total", "counter", "Acknowledgements by result.")
	w.sampleUint("queen_cluster_ack_total", `scope="cluster",result="success"`, st.AckSuccess)
	w.sampleUint("queen_cluster_ack_total", `scope="cluster",result="failed"`, st.AckFailed)
	w.counter("queen_cluster_dlq_total", "Messages moved to a dead-letter queue.", st.DLQMessages)
	var maint uint64
	if s.b.Maintenance().PushMaintenance {
		maint = 1
	}
	w.family("queen_maintenance_mode_enabled", "gauge", "1 while push maintenance mode is on (spec 1.8).")
	w.sampleUint("queen_maintenance_mode_enabled", "", maint)

	if rs, ok := s.b.Replication(); ok {
		s.promReplication(&w, rs)
	}
	if s.fwd != nil {
		w.family("comb_http_forwarded_total", "counter", "Requests this node handed to the leader (relayed: the leader's answer returned; no_leader, unreachable, loop: answered 503).")
		for i, n := range s.fwd.forwardedTotals() {
			w.sampleUint("comb_http_forwarded_total", `outcome="`+fwdOutcomeNames[i]+`"`, n)
		}
	}
	w.gauge("comb_parked_pops", "Long-poll pops currently parked.", float64(st.ParkedPops))
	w.gauge("comb_damaged_partitions", "Partitions out of service because their log is damaged on disk (run comb fsck; GET /health lists them).", float64(st.DamagedPartitions))
	w.gauge("comb_total_lag_messages", "Messages after every consumer group's cursor, summed.", float64(st.TotalLag))
	w.gauge("comb_open_partitions", "Partitions with open segment files.", float64(st.OpenPartitions))
	w.gauge("comb_queues", "Queues.", float64(st.Queues))
	w.gauge("comb_partitions", "Partitions.", float64(st.Partitions))
	w.gauge("comb_open_files", "Partition and DLQ segment/index file handles held open.", float64(st.OpenFiles))
	w.gauge("comb_max_open_files", "Cap on those handles (--max-open-files).", float64(st.MaxOpenFiles))
	w.counter("comb_handle_releases_total", "Logs whose files were closed to stay under the cap.", st.HandleReleases)
	w.counter("comb_evicted_partitions_total", "Partitions released after --idle-evict unused.", st.EvictedPartitions)
	w.counter("comb_retention_files_deleted_total", "Segment files deleted by retention.", st.RetentionFilesDeleted)
	w.counter("comb_retention_bytes_reclaimed_total", "Bytes of segment files deleted by retention.", st.RetentionBytesReclaimed)
	w.counter("comb_retention_cursors_moved_total", "Cursors moved up to a new low-water mark by retention.", st.RetentionCursorsMoved)
	w.gauge("comb_http_requests", "HTTP requests served since start.", float64(s.requests.Load()))
	w.gauge("comb_connections_open", "HTTP connections open now.", float64(s.conns.open.Load()))
	w.gauge("comb_max_connections", "Cap on open HTTP connections (--max-conns); 0 = no cap.", float64(max(s.cfg.MaxConns, 0)))
	w.counter("comb_connections_refused_total", "Connections answered 503 and closed because --max-conns were open.", s.conns.refused.Load())
	w.counter("comb_accept_errors_total", "Accept failures ridden out by backing off: out of file descriptors (EMFILE, ENFILE) or kernel memory.", s.conns.acceptErrors.Load())
	w.counter("comb_payloads_sealed_total", "Payloads encrypted at rest (queues with encryptionEnabled, spec 9.2).", st.PayloadsSealed)
	w.counter("comb_payload_decrypt_failures_total", "Encrypted payloads a read could not decrypt (wrong or missing key, or altered bytes); served as data null with decryptionError.", st.PayloadOpenFailures)
	w.counter("comb_payloads_stored_plain_total", "Payloads of encryptionEnabled queues stored in plaintext because no QUEEN_ENCRYPTION_KEY is configured.", st.PayloadsStoredPlain)
	w.family("comb_auth_refused_total", "counter", "Requests refused by JWT auth (spec 9.1): 401 no or bad token, 403 role below the route's level, 500 JWKS unavailable.")
	w.sampleUint("comb_auth_refused_total", `scope="cluster",status="401"`, s.authRefused401.Load())
	w.sampleUint("comb_auth_refused_total", `scope="cluster",status="403"`, s.authRefused403.Load())
	w.sampleUint("comb_auth_refused_total", `scope="cluster",status="500"`, s.authErrors.Load())
	ss := s.b.StreamStats()
	w.gauge("comb_stream_queries", "Stream queries registered (spec 10).", float64(ss.Queries))
	w.counter("comb_stream_cycles_total", "Stream cycles committed since start.", ss.Cycles)
	w.counter("comb_stream_cycles_failed_total", "Stream cycles answered success:false (nothing applied) since start.", ss.FailedCycles)
	w.gauge("comb_stream_state_keys", "Live stream state keys over all (query, partition) shards.", float64(ss.StateKeys))
	w.gauge("comb_stream_state_bytes", "Bytes of stream state keys and values over all shards.", float64(ss.StateBytes))
	gc := st.GroupCommit
	w.counter("comb_group_commit_batches_total", "Batches the commit log wrote (one fdatasync each with --sync always).", gc.Groups)
	w.counter("comb_group_commit_waiters_total", "Callers (requests, checkpoints) that waited on those batches; over batches_total, the mean group size.", gc.Waiters)
	w.counter("comb_group_commit_waits_total", "Batches the committer held back for more callers (--group-commit-wait).", gc.Waited)
	w.counter("comb_group_commit_waits_capped_total", "Of those, waits that ended at the cap with fewer callers than expected.", gc.Capped)
	w.family("comb_group_commit_wait_seconds_total", "counter", "Time the committer spent holding batches back.")
	w.sampleFloat("comb_group_commit_wait_seconds_total", `scope="cluster"`, float64(gc.WaitMicros)/1e6)
	s.promSeries(&w) // per-queue families, DLQ depth, checkpoint latency (prometheus_series.go)
	w.histogramMicros("comb_sync_latency_seconds", "Durations of the commit log's group-commit fdatasyncs (one per batch written under --sync always) since start.", st.SyncLatency)

	*p = w.b
	send(ctx, fasthttp.StatusOK, "text/plain; version=0.0.4; charset=utf-8", p)
}

type promWriter struct{ b []byte }

func (w *promWriter) family(name, typ, help string) {
	w.b = append(w.b, "# HELP "...)
	w.b = append(w.b, name...)
	w.b = append(w.b, ' ')
	w.b = append(w.b, help...)
	w.b = append(w.b, "\n# TYPE "...)
	w.b = append(w.b, name...)
	w.b = append(w.b, ' ')
	w.b = append(w.b, typ...)
	w.b = append(w.b, '\n')
}

func (w *promWriter) name(name, labels string) {
	w.b = append(w.b, name...)
	if labels != "" {
		w.b = append(w.b, '{')
		w.b = append(w.b, labels...)
		w.b = append(w.b, '}')
	}
	w.b = append(w.b, ' ')
}

func (w *promWriter) sampleUint(name, labels string, v uint64) {
	w.name(name, labels)
	w.b = strconv.AppendUint(w.b, v, 10)
	w.b = append(w.b, '\n')
}

func (w *promWriter) sampleFloat(name, labels string, v float64) {
	w.name(name, labels)
	w.b = strconv.AppendFloat(w.b, v, 'g', -1, 64)
	w.b = append(w.b, '\n')
}

func (w *promWriter) counter(name, help string, v uint64) {
	w.family(name, "counter", help)
	w.sampleUint(name, `scope="cluster"`, v)
}

func (w *promWriter) gauge(name, help string, v float64) {
	w.family(name, "gauge", help)
	w.sampleFloat(name, "", v)
}

// histogramMicros writes a cumulative histogram kept in µs as seconds: buckets, +Inf, _sum and
// _count.
func (w *promWriter) histogramMicros(name, help string, h broker.LatencyHistogram) {
	w.family(name, "histogram", help)
	bucket := name + "_bucket"
	for i, le := range h.BoundsMicros {
		w.name(bucket, `le="`+strconv.FormatFloat(float64(le)/1e6, 'g', -1, 64)+`"`)
		w.b = strconv.AppendUint(w.b, h.Counts[i], 10)
		w.b = append(w.b, '\n')
	}
	w.sampleUint(bucket, `le="+Inf"`, h.Count)
	w.sampleFloat(name+"_sum", "", float64(h.SumMicros)/1e6)
	w.sampleUint(name+"_count", "", h.Count)
}

// promReplication writes a replicated node's families (issue 15): its role, applied LSN, how
// often it became the leader, and the commit latency through raft.
func (s *Server) promReplication(w *promWriter, rs broker.ReplicationStatus) {
	leader := 0.0
	if rs.Role == "leader" {
		leader = 1
	}
	w.gauge("comb_raft_is_leader", "1 while this node leads its cluster (after its barrier), else 0.", leader)
	w.gauge("comb_raft_applied_lsn", "The highest commit-log LSN committed on a quorum and applied on this node.", float64(rs.AppliedLSN))
	w.counter("comb_raft_leader_changes_total", "Times this node became the leader since start.", rs.LeaderTerms)
	w.histogramMicros("comb_raft_commit_latency_seconds", "Commit-log entries from their append to committed on a quorum and applied here, since start.", rs.CommitLatency)
}
