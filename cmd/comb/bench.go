package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/combmq/comb/bench"
)

func init() {
	register("bench", "load generator: push|consume|e2e|fanout|longpoll|cycle|transaction against comb or any Queen server (Redis, NATS: bin/comb-bench)", cmdBench)
}

const benchUsage = `usage: comb bench <push|consume|e2e|fanout|longpoll|cycle|transaction> [flags]
       comb bench compare --baseline OLD_COMB [--candidate NEW_COMB] --workload W [--rounds N] [flags]
       comb bench table FILE...   (markdown table from --json result lines)
`

func cmdBench(args []string) int {
	if len(args) > 0 && args[0] == "table" {
		return benchTable(args[1:], os.Stdout, os.Stderr)
	}
	if len(args) > 0 && args[0] == "compare" {
		return benchCompare(args[1:], os.Stdout, os.Stderr)
	}
	cfg := bench.DefaultConfig()
	workloadGiven := len(args) > 0 && !strings.HasPrefix(args[0], "-")
	if workloadGiven {
		cfg.Workload = bench.Workload(args[0])
		args = args[1:]
	}
	fs := flag.NewFlagSet("comb bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), benchUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.URL, "url", cfg.URL, "Queen-compatible server (driver comb)")
	fs.StringVar(&cfg.Driver, "driver", cfg.Driver, "comb (any Queen v1 HTTP server) | redis | nats (these two: bin/comb-bench, make comb-bench)")
	fs.StringVar(&cfg.RedisAddr, "redis-addr", cfg.RedisAddr, "redis-server host:port (driver redis)")
	fs.StringVar(&cfg.NATSURL, "nats-url", cfg.NATSURL, "nats-server URL (driver nats)")
	fs.IntVar(&cfg.ServerPID, "server-pid", 0, "server process for RSS/CPU; 0 = find the local listener of the target port")
	workloadFlags(fs, &cfg)
	variant := fs.String("variant", "", "label of the server's setting in the report, e.g. \"appendfsync always\"")
	asJSON := fs.Bool("json", false, "print the result as one JSON object, the last line of stdout")
	progress := fs.Bool("progress", false, "print a progress line on stderr every second even when stderr is not a terminal")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "comb bench: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if !workloadGiven {
		// No default workload: `comb bench` alone used to run a push benchmark against
		// 127.0.0.1:6632 and leave its queue behind on whatever server listened there.
		fmt.Fprintln(os.Stderr, "comb bench: a workload is required")
		fs.Usage()
		return 2
	}
	cfg.Progress = *progress || isTerminal(os.Stderr)
	cfg, err := cfg.Normalize()
	if err != nil {
		fmt.Fprintf(os.Stderr, "comb bench: %v\n", err)
		return 2
	}
	drv, err := bench.NewDriver(cfg, bench.Workers(cfg)+cfg.Concurrency)
	if err != nil {
		fmt.Fprintf(os.Stderr, "comb bench: %v\n", err)
		return 1
	}
	defer drv.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var pw io.Writer
	if cfg.Progress {
		pw = os.Stderr
	}
	res, err := bench.Run(ctx, cfg, drv, pw)
	if err != nil {
		fmt.Fprintf(os.Stderr, "comb bench: %v\n", err)
		return 1
	}
	res.Variant = *variant
	if *asJSON {
		res.WriteText(os.Stderr)
		if err := res.WriteJSON(os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "comb bench: %v\n", err)
			return 1
		}
		return 0
	}
	res.WriteText(os.Stdout)
	return 0
}

// workloadFlags registers the flags that shape a workload and what is measured of it: the
// same for one run and for a comparison, so a comparison repeats a single run's command line.
func workloadFlags(fs *flag.FlagSet, cfg *bench.Config) {
	fs.IntVar(&cfg.Queues, "queues", cfg.Queues, "queues (longpoll: one per consumer)")
	fs.IntVar(&cfg.Partitions, "partitions", cfg.Partitions, "partitions per queue")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch, "messages per push request and most messages per pop")
	fs.IntVar(&cfg.Size, "size", cfg.Size, "payload bytes per message")
	fs.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "connections of the main role: pushers (push) or consumers (other workloads; fanout splits them over the groups)")
	fs.IntVar(&cfg.Producers, "producers", cfg.Producers, "pushers in e2e, fanout and longpoll")
	fs.IntVar(&cfg.Groups, "groups", cfg.Groups, "consumer groups; 0 = queue mode (fanout default 10)")
	fs.IntVar(&cfg.StateOps, "state-ops", cfg.StateOps, "cycle: state upserts per streams cycle (transaction: none, its baseline)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "measured window")
	fs.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "unmeasured run before the window")
	fs.DurationVar(&cfg.Interval, "interval", cfg.Interval, "report the rate and server CPU per request of every slice this long of the window (sustained runs: does the rate hold?); 0 = none")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "open-loop target msg/s over all pushers, latency from the intended send time; 0 = closed loop (longpoll default 1000)")
	fs.IntVar(&cfg.Prefill, "prefill", cfg.Prefill, "consume: backlog messages pushed before the clock starts")
	fs.IntVar(&cfg.WaitMs, "wait-ms", cfg.WaitMs, "long-poll timeout of a pop, ms (e2e, fanout, longpoll)")
	fs.IntVar(&cfg.RetentionSeconds, "retention-seconds", cfg.RetentionSeconds, "driver comb: configure every queue with retentionEnabled and this retentionSeconds before the run (does memory stay flat once retention deletes?); 0 = none")
	fs.StringVar(&cfg.RunID, "run-id", "", "name prefix of queues/streams; default random")
	fs.StringVar(&cfg.Token, "token", os.Getenv("COMB_BENCH_TOKEN"), "driver comb: JWT sent as a Bearer token to a server with JWT auth on (env COMB_BENCH_TOKEN)")
	fs.StringVar(&cfg.SyncMetric, "sync-metric", cfg.SyncMetric, "driver comb: counter of the server's /metrics/prometheus read at the window's edges for syncs per request; empty = none")
}

// benchTable reads result JSON lines (the last JSON object line of each file) and prints the
// markdown table of docs/benchmarks.md.
func benchTable(files []string, stdout, stderr io.Writer) int {
	var results []bench.Result
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			fmt.Fprintf(stderr, "comb bench table: %v\n", err)
			return 1
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if !strings.HasPrefix(line, "{") {
				continue
			}
			var r bench.Result
			if err := json.Unmarshal([]byte(line), &r); err == nil && r.Workload != "" {
				results = append(results, r)
			}
		}
		fh.Close()
	}
	fmt.Fprint(stdout, bench.MarkdownTable(results))
	return 0
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
