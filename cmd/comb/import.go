package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/queenimport"
	"github.com/combmq/comb/seal"
)

func init() {
	register("import", "copy a Queen broker's state (PostgreSQL) into a stopped data directory or a running comb (--target, --follow, --cutover); --verify compares", runImport)
}

// Exit codes of comb import.
const (
	importOK      = 0
	importDiffers = 1 // --verify found a difference
	importFailed  = 2 // the import or the comparison could not finish
	importUsage   = 3
)

func runImport(args []string) int {
	fs := flag.NewFlagSet("comb import", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: comb import --from-queen POSTGRES-URL --data-dir DIR [--state FILE] [--verify]
       comb import --from-queen POSTGRES-URL --target http://comb:6632 [--follow] [--verify]
       comb import --target http://comb:6632 --cutover | --stop | --status

Copies Queen's queues (every option), partitions (with their ids), messages (ids,
transactionIds, traceIds, payloads, createdAt, producerSub), consumer-group cursors, live
leases, subscription records and dead letters from Queen's PostgreSQL into a comb data
directory that no server holds. Running it again adds nothing. --verify compares instead:
per partition counts, first/last ids and a checksum of ids and payloads, per group cursors,
per queue dead letters.

With --target the import runs inside a running comb (a live move: --follow, then --cutover
once Queen's consumers are stopped, then --stop once producers push to comb; runbook in
docs/operations.md).

exit codes: 0 done (--verify: no difference); 1 --verify found differences; 2 failed; 3 usage.

flags:`)
		fs.PrintDefaults()
	}
	from := fs.String("from-queen", "", "Queen's PostgreSQL, as a URL: postgres://user@host:5432/db?sslmode=disable")
	dataDir := fs.String("data-dir", "", "the comb data directory to write (created if missing; must not be held by a running server)")
	verify := fs.Bool("verify", false, "compare Queen's tables with the data directory instead of importing")
	quiet := fs.Bool("quiet", false, "no progress lines")
	statePath := fs.String("state", "", "FILE where each partition's copy stands, saved after every page: a run after a crash reads on from there (without it, a run re-reads everything and skips what is stored)")
	encKey := fs.String("encryption-key", "", "Queen's QUEEN_ENCRYPTION_KEY (64 hex), needed to carry encrypted messages (env QUEEN_ENCRYPTION_KEY)")
	var ta targetAction
	fs.StringVar(&ta.target, "target", "", "a running comb's URL (http://comb:6632): the import runs inside that server, through its log (a cluster replicates it); the server connects to Queen's PostgreSQL")
	fs.BoolVar(&ta.follow, "follow", false, "with --target: after the snapshot, the server keeps copying messages that reach Queen, until --stop")
	fs.BoolVar(&ta.cutover, "cutover", false, "with --target: once Queen's consumers are stopped, sync every cursor, lease and dead letter of the following import")
	fs.BoolVar(&ta.stop, "stop", false, "with --target: stop following (once producers push to comb)")
	fs.BoolVar(&ta.show, "status", false, "with --target: print the server's import status (JSON)")
	fs.DurationVar(&ta.overlap, "overlap", queenimport.DefaultOverlap, "with --follow: how far below the previous pass each pass reads again")
	fs.DurationVar(&ta.interval, "interval", queenimport.DefaultInterval, "with --follow: pause between passes")
	fs.StringVar(&ta.token, "token", os.Getenv("COMB_TOKEN"), "with --target: an admin JWT for a server with JWT auth on (env COMB_TOKEN)")
	if _, err := parseInterspersed(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return importOK
		}
		return importUsage
	}
	if ta.target != "" {
		ta.from, ta.verify, ta.quiet = *from, *verify, *quiet
		switch {
		case *dataDir != "":
			fmt.Fprintln(os.Stderr, "comb import: --target and --data-dir exclude each other (a running server holds its data directory)")
			return importUsage
		case *statePath != "":
			fmt.Fprintln(os.Stderr, "comb import: --state is for --data-dir (the server keeps a --target import's positions)")
			return importUsage
		case *from == "" && !ta.cutover && !ta.stop && !ta.show:
			fmt.Fprintln(os.Stderr, "comb import: --from-queen is required")
			return importUsage
		}
		return runImportTarget(ta)
	}
	if ta.follow || ta.cutover || ta.stop || ta.show {
		fmt.Fprintln(os.Stderr, "comb import: --follow, --cutover, --stop and --status need --target (a live move runs inside the serving comb)")
		return importUsage
	}
	if *from == "" || *dataDir == "" {
		fmt.Fprintln(os.Stderr, "comb import: --from-queen and --data-dir (or --target) are required")
		return importUsage
	}
	if *encKey == "" {
		*encKey = os.Getenv("QUEEN_ENCRYPTION_KEY")
	}
	var key *seal.Key
	var keys *seal.Keyring
	if *encKey != "" {
		k, err := seal.ParseKey(*encKey)
		if err != nil {
			fmt.Fprintf(os.Stderr, "comb import: --encryption-key: %v\n", err)
			return importUsage
		}
		key, keys = k, seal.NewKeyring(k)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	conn, err := pgx.Connect(ctx, *from)
	if err != nil {
		fmt.Fprintf(os.Stderr, "comb import: connect to Queen's PostgreSQL: %v\n", err)
		return importFailed
	}
	defer conn.Close(context.Background())
	b, err := broker.Open(broker.Config{DataDir: *dataDir, Keys: keys})
	if errors.Is(err, broker.ErrLocked) {
		fmt.Fprintf(os.Stderr, "comb import: %s is held by a running server: stop it first (the import writes a stopped data directory)\n", *dataDir)
		return importFailed
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "comb import: open %s: %v\n", *dataDir, err)
		return importFailed
	}
	defer b.Close()
	if *verify {
		diffs, err := queenimport.Verify(ctx, conn, b, key)
		if err != nil {
			fmt.Fprintf(os.Stderr, "comb import --verify: %v\n", err)
			return importFailed
		}
		for _, d := range diffs {
			fmt.Println(d)
		}
		if len(diffs) > 0 {
			fmt.Fprintf(os.Stderr, "comb import --verify: %d differences\n", len(diffs))
			return importDiffers
		}
		fmt.Println("comb import --verify: no difference")
		return importOK
	}
	opts := queenimport.Options{Key: key}
	if *statePath != "" {
		if opts.State, err = queenimport.LoadState(*statePath, *dataDir); err != nil {
			fmt.Fprintf(os.Stderr, "comb import: %v\n", err)
			return importFailed
		}
	}
	if !*quiet {
		opts.Progress = os.Stderr
	}
	rep, err := queenimport.Import(ctx, conn, b, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "comb import: %v\n", err)
		return importFailed
	}
	if err := b.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "comb import: close %s: %v\n", *dataDir, err)
		return importFailed
	}
	secs := rep.Elapsed.Seconds()
	fmt.Printf("imported %d queues, %d partitions, %d messages (%d already there), %d cursors, %d live leases (%d expired, not carried), %d subscriptions, %d dead letters, %d trace events in %.2fs (%.0f messages/s)\n",
		rep.Queues, rep.Partitions, rep.Messages, rep.MessagesSkipped, rep.Cursors, rep.Leases, rep.LeasesExpired,
		rep.Subscriptions, rep.DeadLetters, rep.Traces, secs, float64(rep.Messages+rep.MessagesSkipped)/max(secs, 1e-9))
	return importOK
}
