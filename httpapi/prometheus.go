package httpapi

import (
	"bytes"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/version"
)

// promContentType is the text exposition format 0.0.4, which every Prometheus reads.
const promContentType = "text/plain; version=0.0.4; charset=utf-8"

// newPromRegistry builds the registry GET /metrics/prometheus gathers (spec 8.3): the Go
// runtime (go_*) and process (process_*) collectors of client_golang, comb_build_info, the
// broker's and the server's figures (promCollector, read at scrape time), and raft's go-metrics
// when this process runs a replicated node (prometheus_raft.go).
//
// Nothing here sits on the request path: every family is read from counters the broker and the
// server keep anyway (atomics, its sync histogram), when a scrape asks, so a push or a pop pays
// nothing for it (docs/benchmarks.md, "Metrics").
func newPromRegistry(s *Server) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo(),
		promCollector{s},
		raftMetrics(),
	)
	return reg
}

// buildInfo is comb_build_info: always 1, with the version, the VCS revision and the
// toolchain as labels, the convention for joining a version onto other series.
func buildInfo() prometheus.Collector {
	in := version.Read()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "comb_build_info",
		Help: "Always 1; the labels are the running build's version (as GET /health reports it), VCS revision and Go toolchain.",
		ConstLabels: prometheus.Labels{
			"version": in.Short(), "revision": in.Revision, "goversion": in.Go,
		},
	})
	g.Set(1)
	return g
}

// metricsPrometheus serves GET /metrics/prometheus in text format 0.0.4, families sorted by
// name. Cluster-wide counters carry scope="cluster" as Queen's do; comb's own families are
// prefixed comb_. A collector that fails (it cannot: every value is read from memory, statfs
// errors become comb_storage_read_errors) would still let the rest through.
func (s *Server) metricsPrometheus(ctx *fasthttp.RequestCtx) {
	mfs, err := s.prom.Gather()
	if err != nil && len(mfs) == 0 {
		writeError(ctx, fasthttp.StatusInternalServerError, "gather metrics: "+err.Error())
		return
	}
	if err != nil {
		s.log.Warn().Err(err).Msg("metrics: some families could not be gathered")
	}
	p := getBuf()
	w := bytes.NewBuffer((*p)[:0])
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			putBuf(p)
			writeError(ctx, fasthttp.StatusInternalServerError, "encode metrics: "+err.Error())
			return
		}
	}
	*p = w.Bytes()
	send(ctx, fasthttp.StatusOK, promContentType, p)
}

// promDesc is a family's description, built once.
type promDesc struct {
	once sync.Once
	d    *prometheus.Desc
	name string
	help string
	vars []string
	cons prometheus.Labels
}

// desc declares a family of comb's exposition: name, help, variable label names.
func desc(name, help string, vars ...string) *promDesc {
	return &promDesc{name: name, help: help, vars: vars}
}

// clusterDesc declares a counter family with Queen's scope="cluster" constant label.
func clusterDesc(name, help string, vars ...string) *promDesc {
	return &promDesc{name: name, help: help, vars: vars, cons: prometheus.Labels{"scope": "cluster"}}
}

func (p *promDesc) get() *prometheus.Desc {
	p.once.Do(func() { p.d = prometheus.NewDesc(p.name, p.help, p.vars, p.cons) })
	return p.d
}

// emitter sends the samples of one scrape.
type emitter struct{ ch chan<- prometheus.Metric }

func (e emitter) counter(d *promDesc, v uint64, lvs ...string) {
	e.ch <- prometheus.MustNewConstMetric(d.get(), prometheus.CounterValue, float64(v), lvs...)
}

func (e emitter) gauge(d *promDesc, v float64, lvs ...string) {
	e.ch <- prometheus.MustNewConstMetric(d.get(), prometheus.GaugeValue, v, lvs...)
}

// histogramMicros sends a cumulative histogram kept in µs as seconds.
func (e emitter) histogramMicros(d *promDesc, h broker.LatencyHistogram) {
	buckets := make(map[float64]uint64, len(h.BoundsMicros))
	for i, le := range h.BoundsMicros {
		buckets[float64(le)/1e6] = h.Counts[i]
	}
	e.ch <- prometheus.MustNewConstHistogram(d.get(), h.Count, float64(h.SumMicros)/1e6, buckets)
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// promCollector reads the broker's and the server's figures at scrape time. It is an
// unchecked collector (Describe sends nothing): its families depend on the backend (a
// replicated node, a status backend), and the registry still checks each scrape for
// duplicate or inconsistent series.
type promCollector struct{ s *Server }

func (promCollector) Describe(chan<- *prometheus.Desc) {}

func (c promCollector) Collect(ch chan<- prometheus.Metric) {
	s, e := c.s, emitter{ch}
	s.collectCore(e)
	if rs, ok := s.b.Replication(); ok {
		collectReplication(e, rs)
	}
	if s.fwd != nil {
		for i, n := range s.fwd.forwardedTotals() {
			e.counter(mForwarded, n, fwdOutcomeNames[i])
		}
	}
	s.collectStorage(e) // prometheus_storage.go
	s.collectSeries(e)  // prometheus_series.go
}

var (
	mUptime          = desc("queen_uptime_seconds", "Seconds since the server started.")
	mPushRequests    = clusterDesc("queen_cluster_push_requests_total", "POST /api/v1/push requests received, whatever their outcome (400 and 500 included).")
	mPushMessages    = clusterDesc("queen_cluster_push_messages_total", "Messages stored by pushes (duplicates and rejected requests excluded).")
	mPopRequests     = clusterDesc("queen_cluster_pop_requests_total", "Pop requests received on all three pop routes, whatever their outcome (204, 400 and 500 included).")
	mPopMessages     = clusterDesc("queen_cluster_pop_messages_total", "Messages delivered by pops.")
	mAckRequests     = clusterDesc("queen_cluster_ack_requests_total", "POST /api/v1/ack and /ack/batch requests received, whatever their outcome (400 and 500 included).")
	mAckMessages     = clusterDesc("queen_cluster_ack_messages_total", "Acknowledgement items of ack requests that reached the broker.")
	mAcks            = clusterDesc("queen_cluster_ack_total", "Acknowledgements by result.", "result")
	mDLQ             = clusterDesc("queen_cluster_dlq_total", "Messages moved to a dead-letter queue.")
	mMaintenance     = desc("queen_maintenance_mode_enabled", "1 while push maintenance mode is on (spec 1.8).")
	mForwarded       = desc("comb_http_forwarded_total", "Requests this node handed to the leader (relayed: the leader's answer returned; no_leader, unreachable, loop: answered 503).", "outcome")
	mParked          = desc("comb_parked_pops", "Long-poll pops currently parked.")
	mDamaged         = desc("comb_damaged_partitions", "Partitions out of service because their log is damaged on disk (run comb fsck; GET /health lists them).")
	mTotalLag        = desc("comb_total_lag_messages", "Messages after every consumer group's cursor, summed (per group: comb_consumer_group_lag_messages).")
	mOpenParts       = desc("comb_open_partitions", "Partitions with open segment files.")
	mQueues          = desc("comb_queues", "Queues.")
	mPartitions      = desc("comb_partitions", "Partitions.")
	mOpenFiles       = desc("comb_open_files", "Partition and DLQ segment/index file handles held open.")
	mMaxOpenFiles    = desc("comb_max_open_files", "Cap on those handles (--max-open-files).")
	mHandleReleases  = clusterDesc("comb_handle_releases_total", "Logs whose files were closed to stay under the cap.")
	mEvicted         = clusterDesc("comb_evicted_partitions_total", "Partitions released after --idle-evict unused.")
	mRetFiles        = clusterDesc("comb_retention_files_deleted_total", "Segment files deleted by retention.")
	mRetBytes        = clusterDesc("comb_retention_bytes_reclaimed_total", "Bytes of segment files deleted by retention.")
	mRetCursors      = clusterDesc("comb_retention_cursors_moved_total", "Cursors moved up to a new low-water mark by retention.")
	mHTTPRequests    = desc("comb_http_requests_total", "HTTP requests served by this node since start (every route).")
	mConnsOpen       = desc("comb_connections_open", "HTTP connections open now.")
	mMaxConns        = desc("comb_max_connections", "Cap on open HTTP connections (--max-conns); 0 = no cap.")
	mConnsRefused    = clusterDesc("comb_connections_refused_total", "Connections answered 503 and closed because --max-conns were open.")
	mAcceptErrors    = clusterDesc("comb_accept_errors_total", "Accept failures ridden out by backing off: out of file descriptors (EMFILE, ENFILE) or kernel memory.")
	mSealed          = clusterDesc("comb_payloads_sealed_total", "Payloads encrypted at rest (queues with encryptionEnabled, spec 9.2).")
	mDecryptFailures = clusterDesc("comb_payload_decrypt_failures_total", "Encrypted payloads a read could not decrypt (wrong or missing key, or altered bytes); served as data null with decryptionError.")
	mStoredPlain     = clusterDesc("comb_payloads_stored_plain_total", "Payloads of encryptionEnabled queues stored in plaintext because no QUEEN_ENCRYPTION_KEY is configured.")
	mAuthRefused     = clusterDesc("comb_auth_refused_total", "Requests refused by JWT auth (spec 9.1): 401 no or bad token, 403 role below the route's level, 500 JWKS unavailable.", "status")
	mStreamQueries   = desc("comb_stream_queries", "Stream queries registered (spec 10).")
	mStreamCycles    = clusterDesc("comb_stream_cycles_total", "Stream cycles committed since start.")
	mStreamFailed    = clusterDesc("comb_stream_cycles_failed_total", "Stream cycles answered success:false (nothing applied) since start.")
	mStreamKeys      = desc("comb_stream_state_keys", "Live stream state keys over all (query, partition) shards.")
	mStreamBytes     = desc("comb_stream_state_bytes", "Bytes of stream state keys and values over all shards.")
	mGCBatches       = clusterDesc("comb_group_commit_batches_total", "Batches the commit log wrote (one fdatasync each with --sync always).")
	mGCWaiters       = clusterDesc("comb_group_commit_waiters_total", "Callers (requests, checkpoints) that waited on those batches; over batches_total, the mean group size.")
	mGCWaits         = clusterDesc("comb_group_commit_waits_total", "Batches the committer held back for more callers (--group-commit-wait).")
	mGCCapped        = clusterDesc("comb_group_commit_waits_capped_total", "Of those, waits that ended at the cap with fewer callers than expected.")
	mGCWaitSeconds   = clusterDesc("comb_group_commit_wait_seconds_total", "Time the committer spent holding batches back.")
	mHealth          = desc("comb_health_status", "1 for the status GET /health answers now (healthy, degraded or unhealthy), 0 for the others.", "status")
	mDiskFull        = desc("comb_disk_full", "1 while writes fail for want of disk space (ENOSPC, EDQUOT; GET /health says degraded with diskFull), else 0.")
	mSyncLatency     = desc("comb_sync_latency_seconds", "Durations of the commit log's group-commit fdatasyncs (one per batch written under --sync always) since start.")
)

// collectCore sends the broker's and the server's counters and gauges.
func (s *Server) collectCore(e emitter) {
	st := s.rep.Stats()
	e.gauge(mUptime, time.Since(s.start).Seconds())
	e.counter(mPushRequests, s.pushRequests.Load())
	e.counter(mPushMessages, st.PushMessages)
	e.counter(mPopRequests, s.popRequests.Load())
	e.counter(mPopMessages, st.PopMessages)
	e.counter(mAckRequests, s.ackRequests.Load())
	e.counter(mAckMessages, st.AckMessages)
	e.counter(mAcks, st.AckSuccess, "success")
	e.counter(mAcks, st.AckFailed, "failed")
	e.counter(mDLQ, st.DLQMessages)
	e.gauge(mMaintenance, boolGauge(s.b.Maintenance().PushMaintenance))
	e.gauge(mParked, float64(st.ParkedPops))
	e.gauge(mDamaged, float64(st.DamagedPartitions))
	e.gauge(mTotalLag, float64(st.TotalLag))
	e.gauge(mOpenParts, float64(st.OpenPartitions))
	e.gauge(mQueues, float64(st.Queues))
	e.gauge(mPartitions, float64(st.Partitions))
	e.gauge(mOpenFiles, float64(st.OpenFiles))
	e.gauge(mMaxOpenFiles, float64(st.MaxOpenFiles))
	e.counter(mHandleReleases, st.HandleReleases)
	e.counter(mEvicted, st.EvictedPartitions)
	e.counter(mRetFiles, st.RetentionFilesDeleted)
	e.counter(mRetBytes, st.RetentionBytesReclaimed)
	e.counter(mRetCursors, st.RetentionCursorsMoved)
	e.counter(mHTTPRequests, s.requests.Load())
	e.gauge(mConnsOpen, float64(s.conns.open.Load()))
	e.gauge(mMaxConns, float64(max(s.cfg.MaxConns, 0)))
	e.counter(mConnsRefused, s.conns.refused.Load())
	e.counter(mAcceptErrors, s.conns.acceptErrors.Load())
	e.counter(mSealed, st.PayloadsSealed)
	e.counter(mDecryptFailures, st.PayloadOpenFailures)
	e.counter(mStoredPlain, st.PayloadsStoredPlain)
	e.counter(mAuthRefused, s.authRefused401.Load(), "401")
	e.counter(mAuthRefused, s.authRefused403.Load(), "403")
	e.counter(mAuthRefused, s.authErrors.Load(), "500")
	ss := s.b.StreamStats()
	e.gauge(mStreamQueries, float64(ss.Queries))
	e.counter(mStreamCycles, ss.Cycles)
	e.counter(mStreamFailed, ss.FailedCycles)
	e.gauge(mStreamKeys, float64(ss.StateKeys))
	e.gauge(mStreamBytes, float64(ss.StateBytes))
	gc := st.GroupCommit
	e.counter(mGCBatches, gc.Groups)
	e.counter(mGCWaiters, gc.Waiters)
	e.counter(mGCWaits, gc.Waited)
	e.counter(mGCCapped, gc.Capped)
	e.ch <- prometheus.MustNewConstMetric(mGCWaitSeconds.get(), prometheus.CounterValue, float64(gc.WaitMicros)/1e6)
	e.histogramMicros(mSyncLatency, st.SyncLatency)
	s.collectHealth(e)
}

// collectHealth sends the status GET /health would answer (health.go, the same rules), so an
// alert needs no HTTP probe.
func (s *Server) collectHealth(e emitter) {
	_, failing := s.b.CheckpointFailure()
	_, diskFull := s.b.NoSpace()
	status := "healthy"
	switch {
	case !s.b.Healthy():
		status = "unhealthy"
	case failing, diskFull, len(s.b.Damaged()) > 0:
		status = "degraded"
	default:
		if rs, ok := s.b.Replication(); ok && rs.LeaderID == "" {
			status = "degraded"
		}
	}
	for _, st := range []string{"healthy", "degraded", "unhealthy"} {
		e.gauge(mHealth, boolGauge(st == status), st)
	}
	e.gauge(mDiskFull, boolGauge(diskFull))
}

var (
	mRaftLeader        = desc("comb_raft_is_leader", "1 while this node leads its cluster (after its barrier), else 0.")
	mRaftApplied       = desc("comb_raft_applied_lsn", "The highest commit-log LSN committed on a quorum and applied on this node.")
	mRaftLeaderChanges = clusterDesc("comb_raft_leader_changes_total", "Times this node became the leader since start.")
	mRaftCommitLatency = desc("comb_raft_commit_latency_seconds", "Commit-log entries from their append to committed on a quorum and applied here, since start.")
	mRaftHasLeader     = desc("comb_raft_has_leader", "1 while this node knows a leader of its cluster (itself or another), else 0: alert on 0.")
)

// collectReplication sends a replicated node's families (issue 15): its role, whether it
// knows a leader, its applied LSN, how often it became the leader, the commit latency.
func collectReplication(e emitter, rs broker.ReplicationStatus) {
	e.gauge(mRaftLeader, boolGauge(rs.Role == "leader"))
	e.gauge(mRaftHasLeader, boolGauge(rs.LeaderID != ""))
	e.gauge(mRaftApplied, float64(rs.AppliedLSN))
	e.counter(mRaftLeaderChanges, rs.LeaderTerms)
	e.histogramMicros(mRaftCommitLatency, rs.CommitLatency)
}
