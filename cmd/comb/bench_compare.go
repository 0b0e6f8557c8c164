package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/combmq/comb/bench"
)

const benchCompareUsage = `usage: comb bench compare --baseline OLD_COMB [--candidate NEW_COMB] --workload W [--rounds N] [flags]

Runs W against two comb binaries in the same session: each run starts "<binary> serve" with the
--serve flags on a fresh data directory and a free loopback port, waits for /health, measures,
and stops the server (SIGTERM); rounds alternate baseline-candidate and candidate-baseline.
Prints every run and, per figure, the median of the per-round ratios candidate ÷ baseline
with their min–max. With --cluster N a run is the binary on one node and then on a fresh
N-node cluster on loopback, pushed through its leader.

`

// benchCompare is `comb bench compare`: flag parsing, then bench.BinaryCompare.
func benchCompare(args []string, stdout, stderr io.Writer) int {
	cfg := bench.DefaultConfig()
	fs := flag.NewFlagSet("comb bench compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), benchCompareUsage)
		fs.PrintDefaults()
	}
	baseline := fs.String("baseline", "", "the reference comb binary, e.g. the previous release (required)")
	candidate := fs.String("candidate", "", "the comb binary under test; default this binary")
	workload := fs.String("workload", "", "push|consume|e2e|fanout|longpoll|cycle|transaction (required)")
	rounds := fs.Int("rounds", 3, "rounds; each runs both binaries once")
	serve := fs.String("serve", "--sync always", "serve flags both binaries get, split at spaces (each run sets --addr and --data-dir)")
	cluster := fs.Int("cluster", 0, "0: one node per run; 3 or 5: each run is one node and then a fresh local cluster of that many nodes of the same binary (peer TLS from its `comb certs`), the push sent to the leader: the leader's CPU, the followers', and both over the one node's (push only)")
	dataRoot := fs.String("data-root", os.TempDir(), "directory under which each run's fresh data directory is made; on the disk under test, not a tmpfs")
	workloadFlags(fs, &cfg)
	asJSON := fs.Bool("json", false, "print the comparison as one JSON object, the last line of stdout; the text goes to stderr")
	progress := fs.Bool("progress", false, "print a progress line on stderr every second even when stderr is not a terminal")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "comb bench compare: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *workload == "" {
		fmt.Fprintln(stderr, "comb bench compare: --workload is required")
		fs.Usage()
		return 2
	}
	if *candidate == "" {
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "comb bench compare: this binary's path for --candidate: %v\n", err)
			return 2
		}
		*candidate = self
	}
	cfg.Workload = bench.Workload(*workload)
	cfg.Progress = *progress || isTerminal(os.Stderr)
	cfg, err := cfg.Normalize()
	if err != nil {
		fmt.Fprintf(stderr, "comb bench compare: %v\n", err)
		return 2
	}
	bc := bench.BinaryCompare{
		Baseline: absPath(*baseline), Candidate: absPath(*candidate),
		Serve: strings.Fields(*serve), DataRoot: absPath(*dataRoot), Rounds: *rounds, Config: cfg,
		Cluster: *cluster,
	}
	if err := bc.Check(); err != nil {
		fmt.Fprintf(stderr, "comb bench compare: %v\n", err)
		return 2
	}
	if bench.OnTmpfs(bc.DataRoot) {
		fmt.Fprintf(stderr, "comb bench compare: warning: %s is a tmpfs, where fdatasync costs nothing; durable figures will not mean much (--data-root)\n", bc.DataRoot)
	}

	text := stdout
	if *asJSON {
		text = stderr
	}
	var pw io.Writer
	if cfg.Progress {
		pw = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bc.Describe().WriteHeader(text)
	cmp, runErr := bc.Run(ctx, pw, func(r bench.CompareRun) { bench.WriteRun(text, r) })
	cmp.WriteSummary(text)
	if runErr != nil {
		fmt.Fprintf(stderr, "comb bench compare: %v\n", runErr)
	}
	if *asJSON {
		if err := cmp.WriteJSON(stdout); err != nil {
			fmt.Fprintf(stderr, "comb bench compare: %v\n", err)
			return 1
		}
	}
	if runErr != nil {
		return 1
	}
	return 0
}

// absPath makes p absolute so the report names the file that ran whatever the working
// directory; p itself when that fails (Check then says why).
func absPath(p string) string {
	if p == "" {
		return p
	}
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
