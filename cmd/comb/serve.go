package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/httpapi"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/replica"
	"github.com/combmq/comb/report"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/ui"
)

func init() {
	register("serve", "run the broker: the Queen v1 HTTP API on a data directory", runServe)
}

// shutdownGrace bounds how long SIGTERM waits for in-flight requests; parked long-polls are
// answered at once, so only slow writes can use it.
const shutdownGrace = 30 * time.Second

// depositionGrace bounds how long a stale node (a deposed leader, or one that
// received a snapshot) lets its requests finish before it restarts: a deposed
// leader's entries fail as raft steps down, so it is short.
const depositionGrace = 3 * time.Second

// serveEnv maps each flag to its environment fallback (flag > environment > default).
var serveEnv = [][2]string{
	{"addr", "COMB_ADDR"},
	{"data-dir", "COMB_DATA_DIR"},
	{"sync", "COMB_SYNC"},
	{"sync-interval", "COMB_SYNC_INTERVAL"},
	{"checkpoint-interval", "COMB_CHECKPOINT_INTERVAL"},
	{"group-commit-wait", "COMB_GROUP_COMMIT_WAIT"},
	{"log-level", "COMB_LOG_LEVEL"},
	{"max-body", "COMB_MAX_BODY"},
	{"max-batch", "COMB_MAX_BATCH"},
	{"pprof", "COMB_PPROF"},
	{"max-open-files", "COMB_MAX_OPEN_FILES"},
	{"idle-evict", "COMB_IDLE_EVICT"},
	{"flush-interval", "COMB_FLUSH_INTERVAL"},
	{"flush-syncfs", "COMB_FLUSH_SYNCFS"},
	{"small-partitions", "COMB_SMALL_PARTITIONS"},
	{"max-segment-file-size", "COMB_MAX_SEGMENT_FILE_SIZE"},
	{"max-conns", "COMB_MAX_CONNS"},
	{"ui-dir", "COMB_UI_DIR"},
	{"analytics", "COMB_ANALYTICS"},
	{"retention-interval", "RETENTION_INTERVAL"}, // Queen's names, in ms
	{"eviction-interval", "EVICTION_INTERVAL"},
}

func runServe(args []string) int {
	fs := flag.NewFlagSet("comb serve", flag.ContinueOnError)
	addr := fs.String("addr", ":6632", "listen address host:port (env COMB_ADDR, else HOST and PORT)")
	dataDir := fs.String("data-dir", "./comb-data", "data directory, created if missing (env COMB_DATA_DIR)")
	syncMode := fs.String("sync", "always", "when pushes are fdatasync'd before the answer: always|interval|never (env COMB_SYNC)")
	syncInterval := fs.Duration("sync-interval", 10*time.Millisecond, "group-commit period for --sync interval (env COMB_SYNC_INTERVAL)")
	groupWait := fs.Duration("group-commit-wait", broker.DefaultGroupCommitWait, "longest the commit log holds a batch for more callers before its fdatasync (--sync always; only once two or more were seen waiting at once and they come often enough for it to gather four more); 0 = never (env COMB_GROUP_COMMIT_WAIT)")
	checkpoint := fs.Duration("checkpoint-interval", 5*time.Millisecond, "cursor checkpoint period (env COMB_CHECKPOINT_INTERVAL)")
	logLevel := fs.String("log-level", "info", "trace|debug|info|warn|error (env COMB_LOG_LEVEL)")
	maxBody := byteSize(httpapi.DefaultMaxBodyBytes)
	fs.Var(&maxBody, "max-body", "request body cap, bytes or with a suffix like 64MiB; larger bodies get 413 (env COMB_MAX_BODY)")
	maxBatch := fs.Int("max-batch", httpapi.DefaultMaxBatch, "cap on a pop's batch (env COMB_MAX_BATCH)")
	maxOpenFiles := fs.Int("max-open-files", segment.DefaultMaxHandles, "cap on partition segment and index files held open at once; colder logs are closed and reopened on demand; < 0 = no cap (env COMB_MAX_OPEN_FILES)")
	idleEvict := fs.Duration("idle-evict", broker.DefaultIdleEvict, "a partition unused this long leaves memory (files closed, dedup table dropped); < 0 = never (env COMB_IDLE_EVICT)")
	flushSyncFS := fs.Bool("flush-syncfs", false, "let a flush pass make many files durable with one syncfs(2) instead of an fdatasync/fsync of each through its own descriptor (the default): 3.5-6x less time and CPU per pass over 1,000 partitions, but syncfs syncs nothing on file systems without sync_fs (FUSE, some network file systems), so serve refuses it unless the data directory is on ext4, xfs or btrfs on Linux 5.8+ (env COMB_FLUSH_SYNCFS)")
	smallParts := fs.Bool("small-partitions", false, "experimental (issue 23): a new partition starts without a directory or files of its own, its records homed in the shared file <data>/small by the flush pass until it holds 256 KiB, when it gets its own directory (env COMB_SMALL_PARTITIONS)")
	flushInterval := fs.Duration("flush-interval", broker.DefaultFlushInterval, "longest the commit log goes without a flush pass (partition files synced, snapshots written, the log truncated); one runs sooner once it grew 256 MiB (env COMB_FLUSH_INTERVAL)")
	maxSegFile := byteSize(segment.DefaultMaxFileBytes)
	fs.Var(&maxSegFile, "max-segment-file-size", "a partition's active segment file is sealed and a new one started past this size, bytes or with a suffix like 64MiB (env COMB_MAX_SEGMENT_FILE_SIZE)")
	maxConns := fs.Int("max-conns", 0, "cap on open HTTP connections; one past it is answered 503 and closed. 0 = derive from the open-file limit: RLIMIT_NOFILE minus the partition file budget (--max-open-files, at most half the limit) minus 64 reserved descriptors, at most 10000; an explicit value is lowered to that room too; < 0 = no cap (env COMB_MAX_CONNS)")
	uiDir := fs.String("ui-dir", "", "serve this directory's static files at / (spec 8.10 single-page fallback) instead of the built-in dashboard, e.g. a Queen dashboard build (env COMB_UI_DIR)")
	analyticsOn := fs.Bool("analytics", true, "count pushes, pops and acks per queue and minute for the dashboard's series and the per-minute Prometheus gauges; false only to measure their cost (env COMB_ANALYTICS)")
	retentionInterval, evictionInterval := millis(broker.DefaultRetentionInterval), millis(broker.DefaultEvictionInterval)
	fs.Var(&retentionInterval, "retention-interval", "how often retentionSeconds and completedRetentionSeconds reclaim whole files and update the counts, ms or a duration; pops never see an expired message whatever it is (env RETENTION_INTERVAL, ms, as Queen's)")
	fs.Var(&evictionInterval, "eviction-interval", "the same for maxWaitTimeSeconds (env EVICTION_INTERVAL, ms, as Queen's)")
	pprofAddr := fs.String("pprof", "", "serve net/http/pprof on this loopback host:port, e.g. 127.0.0.1:6060; off when empty (env COMB_PPROF)")
	var secFlags securityFlags
	secFlags.register(fs)
	var clFlags clusterFlags
	clFlags.register(fs)
	if err := parseFlags(fs, args, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		reportFlag(os.Stderr, fs, fmt.Sprintf("unexpected argument %q (flags only; the data directory is --data-dir)", fs.Arg(0)))
		return 2
	}
	secFlags.noteCommandLine(fs)
	if err := applyEnv(fs, os.Getenv); err != nil {
		var ee *envError
		if errors.As(err, &ee) {
			reportFlag(os.Stderr, fs, explainEnvError(fs, ee))
		} else {
			reportFlag(os.Stderr, fs, err.Error())
		}
		return 2
	}
	clCfg, clustered, err := clFlags.config(*dataDir, *addr)
	if err != nil {
		reportFlag(os.Stderr, fs, err.Error())
		return 2
	}
	// Every value is checked before the data directory is created or opened, so that a typo
	// costs no log replay (issue 25).
	if msg := checkServeValues(*syncMode, *syncInterval, *checkpoint, *groupWait, *flushInterval, *maxBatch); msg != "" {
		reportFlag(os.Stderr, fs, msg)
		return 2
	}
	level, err := zerolog.ParseLevel(*logLevel)
	if err != nil {
		reportFlag(os.Stderr, fs, fmt.Sprintf("--log-level %q: want trace, debug, info, warn or error", *logLevel))
		return 2
	}
	if err := checkListenAddr("addr", *addr); err != nil {
		reportFlag(os.Stderr, fs, err.Error())
		return 2
	}
	log := newLogger(level)
	if clustered {
		clCfg.Logger = replica.NewHCLogger(log) // raft's lines in comb's format and level (issue 22)
	}
	sec, err := secFlags.build(log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "comb serve:", err)
		return 2
	}
	site, err := dashboard(*uiDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "comb serve: --ui-dir:", err)
		return 2
	}
	defer site.Close()
	if *pprofAddr != "" {
		at, stopPprof, err := startPprof(*pprofAddr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "comb serve:", err)
			return 2
		}
		defer stopPprof()
		log.Info().Str("addr", at.String()).Msg("pprof listening (block and mutex sampling on)")
	}

	// 0700: the data directory holds payloads (in clear for queues without encryption).
	if err := os.MkdirAll(*dataDir, 0o700); err != nil {
		log.Error().Err(err).Str("data_dir", *dataDir).Msg("cannot create the data directory")
		return 1
	}
	if warn, err := checkDataDirRole(*dataDir, clustered, clustered && clCfg.Join); err != nil {
		log.Error().Err(err).Msg("cannot start")
		return 1
	} else if warn != "" {
		log.Warn().Msg(warn)
	}
	repl, replicated, raftLock, err := openReplica(clCfg, clustered)
	if err != nil {
		log.Error().Err(err).Msg("cannot start replication")
		return 1
	}
	if raftLock != nil {
		defer raftLock.Close()
	}
	if clustered && clCfg.PeerTLS == nil {
		defer warnInsecure(log, insecureWarnEvery)()
	}
	b, err := broker.Open(broker.Config{
		DataDir:            *dataDir,
		Sync:               *syncMode,
		SyncInterval:       *syncInterval,
		CheckpointInterval: *checkpoint,
		GroupCommitWait:    offIfZero(*groupWait),
		MaxBatch:           *maxBatch,
		Logger:             log,
		MaxOpenFiles:       *maxOpenFiles,
		IdleEvict:          *idleEvict,
		RetentionInterval:  retentionInterval.d,
		EvictionInterval:   evictionInterval.d,
		FlushInterval:      *flushInterval,
		FlushSyncFS:        *flushSyncFS,
		SmallPartitions:    *smallParts,
		MaxSegmentFileSize: int64(maxSegFile),
		Keys:               sec.keys,
		NoAnalytics:        !*analyticsOn,
		Replicated:         replicated,
	})
	if err != nil {
		if repl != nil {
			repl.Close()
		}
		ev := log.Error().Err(err).Str("data_dir", *dataDir)
		switch {
		case errors.Is(err, broker.ErrStrayData):
			ev = ev.Str("hint", "nothing was deleted; run `comb fsck --repair "+*dataDir+"` to rebuild the metadata journal from the data, then start again")
		case errors.Is(err, meta.ErrCorrupt) || errors.Is(err, segment.ErrCorrupt):
			ev = ev.Str("hint", "damaged data that a restart must not cut away; run `comb fsck "+*dataDir+"` for the full report")
		}
		ev.Msg("cannot open the broker")
		return 1
	}
	if repl != nil {
		// Raft starts once the broker can apply what it commits.
		if err := repl.Start(b); err != nil {
			log.Error().Err(err).Msg("cannot start raft")
			closeBroker(b, log)
			return 1
		}
		log.Info().Str("node_id", *clFlags.nodeID).Str("raft_addr", *clFlags.raftAddr).Str("http_addr", clCfg.HTTPAddr).
			Bool("peer_tls", clCfg.PeerTLS != nil).Str("cluster_id", repl.ClusterID()).Msg("replicated: raft started")
	}
	conns := resolveMaxConns(*maxConns, *maxOpenFiles, nofileLimit(), log)
	srv := httpapi.New(b, report.New(b.View()), httpapi.Config{ // the reports read the broker through its view
		MaxBodyBytes: int(maxBody),
		MaxBatch:     *maxBatch,
		MaxConns:     conns,
		Logger:       log,
		Auth:         sec.auth,
		TLS:          sec.tlsConfig(),
		Static:       site,
		Cluster:      forwardTo(repl),
		Migration:    migrationJobs(b, secFlags.encKey),
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Error().Err(err).Str("addr", *addr).Msg("cannot listen")
		closeBroker(b, log)
		return 1
	}
	log.Info().Str("addr", ln.Addr().String()).Str("data_dir", *dataDir).Str("sync", *syncMode).
		Int64("max_body_bytes", int64(maxBody)).Int("max_conns", conns).Bool("tls", sec.cert != nil).Msg("comb listening")
	logDashboard(log, ln.Addr(), sec.cert != nil, *uiDir)
	sec.logPosture(log, ln.Addr(), *dataDir)
	defer sec.reloadOnHUP(log)()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if repl != nil {
		// The requests followers forward, on the raft port (Shutdown ends it with Serve).
		go func() { _ = srv.ServePeer(repl.PeerHTTP()) }()
	}
	select {
	case err := <-served:
		log.Error().Err(err).Msg("server stopped")
		closeBroker(b, log)
		return 1
	case <-b.Stale():
		// A replicated node whose memory may differ from the committed
		// state (nil channel on a single node): it lost its leadership with
		// writes possibly in flight, or received another node's snapshot,
		// which a start installs. Its broker froze; close it, start again.
		log.Warn().Msg("this node must restart to recover the committed state (leadership lost, or another node's snapshot received); restarting")
		dctx, cancel := context.WithTimeout(context.Background(), depositionGrace)
		defer cancel()
		if err := srv.Shutdown(dctx); err != nil {
			log.Warn().Err(err).Msg("in-flight requests did not finish in time")
		}
		closeBroker(b, log)
		return restartProcess(log)
	case <-ctx.Done():
	}
	stop() // a second signal kills the process the default way
	log.Info().Msg("shutting down: answering parked pops, then closing the broker")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn().Err(err).Msg("in-flight requests did not finish in time")
	}
	if repl != nil && repl.Leading() {
		// Nothing is in flight any more: make the state durable while this
		// node can still commit the pass's checkpoint (once it hands over
		// it writes no state file), then hand the leadership over rather
		// than leave the others to notice the silence (an election timeout).
		if err := b.Flush(); err != nil {
			log.Warn().Err(err).Msg("last flush pass before handing the leadership over")
		}
		if err := repl.HandOver(); err != nil {
			log.Warn().Err(err).Msg("could not hand the leadership over; the others elect a leader after their timeout")
		}
	}
	if !closeBroker(b, log) {
		return 1
	}
	log.Info().Msg("stopped")
	return 0
}

// dashboard is the site served at /: the directory of --ui-dir when given, else the built-in one.
func dashboard(dir string) (*ui.Site, error) {
	if dir == "" {
		return ui.Embedded(), nil
	}
	return ui.Dir(dir)
}

// closeBroker writes the final checkpoint and closes files.
func closeBroker(b *broker.Broker, log zerolog.Logger) bool {
	if err := b.Close(); err != nil {
		log.Error().Err(err).Msg("closing the broker")
		return false
	}
	return true
}

// applyEnv sets every flag not given on the command line from its environment variable; the
// address falls back to HOST and PORT (spec 0.1) when COMB_ADDR is unset.
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, fe := range append(append(serveEnv, securityEnv...), clusterEnv...) {
		name, env := fe[0], fe[1]
		if given[name] {
			continue
		}
		v := getenv(env)
		if v == "" && name == "addr" {
			v = hostPortFromEnv(getenv)
		}
		if v == "" {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return &envError{env: env, flag: name, value: v, err: err}
		}
	}
	return nil
}

// hostPortFromEnv is HOST:PORT with Queen's defaults (0.0.0.0, 6632), or "" when neither is set.
func hostPortFromEnv(getenv func(string) string) string {
	host, port := getenv("HOST"), getenv("PORT")
	if host == "" && port == "" {
		return ""
	}
	if host == "" {
		host = "0.0.0.0"
	}
	if port == "" {
		port = "6632"
	}
	return net.JoinHostPort(host, port)
}

// newLogger writes human-readable lines to a terminal and JSON lines otherwise.
func newLogger(level zerolog.Level) zerolog.Logger {
	var out = zerolog.New(os.Stderr)
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		out = zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, TimeFormat: time.RFC3339})
	}
	return out.Level(level).With().Timestamp().Logger()
}

// byteSize is a flag.Value for sizes: plain bytes, or a number with a suffix. KiB/MiB/GiB and
// the bare K/M/G are powers of 1024; KB/MB/GB are powers of 1000.
type byteSize int64

// String prints the size in the largest binary unit that divides it (64MiB, not 67108864), a
// form Set reads back.
func (s *byteSize) String() string {
	n := int64(*s)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

func (s *byteSize) Set(text string) error {
	t := strings.TrimSpace(text)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return fmt.Errorf("size %q: want bytes or a number with a suffix like 64MiB", text)
	}
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return fmt.Errorf("size %q: %w", text, err)
	}
	mult := map[string]int64{
		"": 1, "b": 1,
		"k": 1 << 10, "kib": 1 << 10, "kb": 1e3,
		"m": 1 << 20, "mib": 1 << 20, "mb": 1e6,
		"g": 1 << 30, "gib": 1 << 30, "gb": 1e9,
	}[strings.ToLower(strings.TrimSpace(t[i:]))]
	if mult == 0 {
		return fmt.Errorf("size %q: unknown suffix %q; want bytes or a number with a suffix like 64MiB, 512KiB or 1GB", text, t[i:])
	}
	if n <= 0 || n > (1<<31-1)/mult {
		return fmt.Errorf("size %q: must be between 1 byte and 2 GiB", text)
	}
	*s = byteSize(n * mult)
	return nil
}

// offIfZero maps a flag's 0 ("off") to a negative duration, which broker.Config reads as off
// (its 0 is the default).
func offIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
