package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/combmq/comb/dump"
)

func init() {
	register("dump", "print segments, records and index entries of a data directory as JSON lines", runDump)
}

func runDump(args []string) int {
	fs := flag.NewFlagSet("comb dump", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: comb dump [flags] DATA-DIR

Prints one JSON object per line ("type": partition, segment, record or index), read-only
(safe on a live server's directory). Each log is read as the server would serve it after a
restart: its files up to their durable end, then the records only the commit log holds (their
lines carry the commit log's "lsn"). With --commit-log it prints the commit log's entries
instead ("type": commitlog; with --payload each push's records too). Examples:
  comb dump --queue orders --partition cust-42 --payload ./comb-data | jq -c 'select(.type=="record")'
  comb dump --partition-id 0198e4c1-0000-7000-8000-00000000aa01 --what index ./comb-data
  comb dump --queue orders --from 2026-07-30T09:00:00Z --to 2026-07-30T10:00:00Z --payload ./comb-data > orders.jsonl
  comb dump --commit-log ./comb-data | jq -c 'select(.replay)'
  comb dump --stream-query word-count ./comb-data | jq -c 'select(.type=="stream_row")'

flags:`)
		fs.PrintDefaults()
	}
	var o dump.Options
	fs.StringVar(&o.Queue, "queue", "", "only this queue")
	fs.StringVar(&o.Partition, "partition", "", "only this partition name (with --queue)")
	fs.StringVar(&o.PartitionID, "partition-id", "", "only this partition id (its directory name under partitions/)")
	fs.BoolVar(&o.DLQ, "dlq", false, "also the dead-letter logs of the selected queues")
	fs.Uint64Var(&o.FromOffset, "from-offset", 0, "first offset (inclusive)")
	fs.Uint64Var(&o.ToOffset, "to-offset", 0, "last offset (inclusive); 0 = no limit")
	from := fs.String("from", "", "first segment timestamp (RFC 3339, a date, or µs since the epoch)")
	to := fs.String("to", "", "last segment timestamp (inclusive)")
	what := fs.String("what", "segments,records", "comma list of: segments, records, index")
	fs.BoolVar(&o.Payload, "payload", false, "include each record's payload (needed for comb replay from a dump)")
	fs.StringVar(&o.StreamQuery, "stream-query", "", "print this stream query (name or query id) and its shards' state rows (stream_query, stream_shard, stream_row lines) instead of the logs")
	fs.BoolVar(&o.CommitLog, "commit-log", false, "print the commit log's entries (kind, LSN, partition and offsets of pushes, whether a restart replays them) instead of the logs")
	rest, err := parseFlagsWith(fs, args, os.Stderr, parseInterspersed)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if len(rest) != 1 {
		fmt.Fprintln(os.Stderr, "comb dump: exactly one DATA-DIR is required")
		return 2
	}
	for _, w := range strings.Split(*what, ",") {
		switch strings.TrimSpace(w) {
		case "segments":
			o.Segments = true
		case "records":
			o.Records = true
		case "index":
			o.Index = true
		case "":
		default:
			fmt.Fprintf(os.Stderr, "comb dump: --what: unknown %q (segments, records, index)\n", w)
			return 2
		}
	}
	if o.FromMicros, err = optTime(*from); err == nil {
		o.ToMicros, err = optTime(*to)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "comb dump:", err)
		return 2
	}
	if _, err := dump.Run(rest[0], o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "comb dump:", err)
		return 1
	}
	return 0
}

// optTime parses an optional --from/--to value; "" is 0 (no limit).
func optTime(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	return dump.ParseTime(s)
}
