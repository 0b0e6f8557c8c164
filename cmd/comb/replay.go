package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/combmq/comb/auth"
	"github.com/combmq/comb/replay"
	"github.com/combmq/comb/seal"
)

func init() {
	register("replay", "push messages from a data directory or a dump file to a running broker", runReplay)
}

func runReplay(args []string) int {
	fs := flag.NewFlagSet("comb replay", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: comb replay --target URL [flags] (--data-dir DIR | --dump FILE)

Pushes messages to a running comb or Queen-compatible broker over HTTP, keeping each
partition's order and each message's transactionId (so the target's dedup drops what it
already has). With --state, an interrupted replay resumes where the target last answered 201.
From a data directory, each target queue is first configured like its source queue
(namespace, task, lease time, retries, DLQ, retention, encryptionEnabled, ...; --no-config
does not). Encrypted payloads (queues with encryptionEnabled) are decrypted with the server's
keys, taken from QUEEN_ENCRYPTION_KEY and COMB_ENCRYPTION_PREVIOUS_KEYS, and pushed only to a
target that seals them again (comb with a key), unless --allow-plaintext. Cursors, leases,
dead letters, traces and timestamps are not carried (listed at the end).
Examples:
  comb replay --target http://127.0.0.1:6632 --data-dir ./old-data --queue orders --state replay.json
  comb dump --queue orders --payload ./comb-data > orders.jsonl
  comb replay --target http://backup:6632 --dump orders.jsonl --to-queue orders-restored --rate 5000

flags:`)
		fs.PrintDefaults()
	}
	var o replay.Options
	fs.StringVar(&o.Target, "target", "", "target broker base URL (required), e.g. http://127.0.0.1:6632")
	fs.StringVar(&o.DataDir, "data-dir", "", "source: a stopped data directory (read-only)")
	fs.StringVar(&o.DumpFile, "dump", "", "source: a `FILE` written by comb dump --payload, or - for stdin")
	fs.StringVar(&o.Queue, "queue", "", "only this source queue")
	fs.StringVar(&o.Partition, "partition", "", "only this source partition name")
	fs.StringVar(&o.PartitionID, "partition-id", "", "only this source partition, by id (data directory only)")
	fs.StringVar(&o.ToQueue, "to-queue", "", "push into this queue instead of the source queue")
	fs.StringVar(&o.ToPartition, "to-partition", "", "push into this partition name instead of the source partition's")
	from := fs.String("from", "", "first message timestamp (RFC 3339, a date, or µs since the epoch)")
	to := fs.String("to", "", "last message timestamp (inclusive)")
	fs.IntVar(&o.Batch, "batch", 500, "messages per push request")
	fs.Float64Var(&o.Rate, "rate", 0, "messages per second across all partitions; 0 = as fast as the target takes them")
	fs.IntVar(&o.Concurrency, "concurrency", 8, "partitions pushed in parallel")
	fs.StringVar(&o.StateFile, "state", "", "resume-state file: created, updated, and read on the next run")
	fs.BoolVar(&o.NoConfig, "no-config", false, "leave the target queues' configuration as it is; by default each is configured like its source queue (namespace, task, every option) before the first push")
	fs.BoolVar(&o.AllowPlaintext, "allow-plaintext", false, "push the payloads of encryptionEnabled queues even where the target would store them in plaintext (no QUEEN_ENCRYPTION_KEY there, or a target replay cannot ask)")
	tokenFile := fs.String("token-file", "", "`FILE` holding a bearer token for a target with JWT auth, read-write role (see comb token); env COMB_TOKEN")
	noProgress := fs.Bool("no-progress", false, "no progress bar even on a terminal")
	rest, err := parseFlagsWith(fs, args, os.Stderr, parseInterspersed)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if len(rest) == 1 && o.DataDir == "" && o.DumpFile == "" {
		o.DataDir = rest[0] // `comb replay --target URL DIR`
	} else if len(rest) > 0 {
		fmt.Fprintf(os.Stderr, "comb replay: unexpected argument %q\n", rest[0])
		return 2
	}
	if o.FromMicros, err = optTime(*from); err == nil {
		o.ToMicros, err = optTime(*to)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "comb replay:", err)
		return 2
	}
	if o.Token, err = replayToken(*tokenFile, os.Getenv); err != nil {
		reportFlag(os.Stderr, fs, err.Error())
		return 2
	}
	if !*noProgress && onTerminal(os.Stderr) {
		o.Progress = os.Stderr
	}
	// Encrypted payloads of a data directory (issue 11) open with the server's keys, from the
	// server's environment: QUEEN_ENCRYPTION_KEY and COMB_ENCRYPTION_PREVIOUS_KEYS.
	if k := os.Getenv("QUEEN_ENCRYPTION_KEY"); k != "" {
		if o.Keys, err = seal.ParseKeyring(k, auth.SplitPaths(os.Getenv("COMB_ENCRYPTION_PREVIOUS_KEYS"))); err != nil {
			fmt.Fprintln(os.Stderr, "comb replay: QUEEN_ENCRYPTION_KEY:", err)
			return 2
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	st, err := replay.Run(ctx, o)
	fmt.Fprintf(os.Stderr, "comb replay: %d partitions, %d queues configured, %d pushed, %d already there (duplicates), %d skipped by the resume state, %d requests\n",
		st.Partitions, st.Configured, st.Pushed, st.Duplicates, st.Skipped, st.Requests)
	if err == nil {
		fmt.Fprintln(os.Stderr, "comb replay: not carried (see to them on the target):")
		for _, n := range replay.NotCarried(o) {
			fmt.Fprintln(os.Stderr, "  -", n)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "comb replay:", err)
		if o.StateFile != "" {
			fmt.Fprintf(os.Stderr, "comb replay: run the same command again to resume (state in %s)\n", o.StateFile)
		}
		return 1
	}
	return 0
}

// replayToken is the bearer token of --token-file (the file's text without surrounding white
// space), else COMB_TOKEN, else "".
func replayToken(file string, getenv func(string) string) (string, error) {
	if file == "" {
		return strings.TrimSpace(getenv("COMB_TOKEN")), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("--token-file %s is empty", file)
	}
	return t, nil
}
