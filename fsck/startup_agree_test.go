package fsck

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

// buildStartupDir makes root a data directory, closed cleanly, holding one
// of every file kind the server reads at start-up: partition segments,
// indexes, dedup.idx and a sealed dedup run (7000 pushes with
// transactionIds), notes/log (two traces and a deletion), streams/ (a query
// and a shard), cursor/ (a pop), meta/journal, meta/maintenance (push
// maintenance switched on and off) and meta/analytics.
func buildStartupDir(root string) error {
	b, err := broker.Open(broker.Config{DataDir: root, Sync: "never", Logger: zerolog.Nop()})
	if err != nil {
		return err
	}
	var pid string
	for i := 0; i < 7; i++ {
		items := make([]broker.PushItem, 1000)
		for j := range items {
			items[j] = broker.PushItem{Queue: "src", Partition: "p", TransactionID: fmt.Sprintf("m%d-%d", i, j), Payload: []byte("1")}
		}
		res, err := b.Push(items)
		if err != nil {
			return err
		}
		pid = res[0].PartitionID
	}
	if _, err := b.AddTrace(broker.TraceRequest{PartitionID: pid, TransactionID: "m0-0", Names: []string{"t"}, Data: []byte(`{"k":1}`)}); err != nil {
		return err
	}
	if _, err := b.AddTrace(broker.TraceRequest{PartitionID: pid, TransactionID: "m0-1", Names: []string{"t"}, Data: []byte(`{"k":2}`)}); err != nil {
		return err
	}
	if _, err := b.DeleteMessage(pid, "m0-2"); err != nil {
		return err
	}
	if _, err := b.SetPushMaintenance(true); err != nil {
		return err
	}
	if _, err := b.SetPushMaintenance(false); err != nil {
		return err
	}
	q, err := b.StreamRegister(broker.StreamQueryRequest{Name: "wc", SourceQueue: "src", ConfigHash: "h"})
	if err != nil {
		return err
	}
	res, err := b.Pop(context.Background(), broker.PopRequest{Queue: "src", Group: "g", Batch: 1, Partitions: 1})
	if err != nil {
		return err
	}
	res.Release()
	r, err := b.StreamCycle(broker.StreamCycleRequest{QueryID: q.QueryID, PartitionID: res.PartitionID,
		StateOps: []broker.StreamStateOp{{Type: "upsert", Key: "a", Value: []byte(`{"n":1}`)}}})
	if err != nil {
		return err
	}
	if !r.Success {
		return fmt.Errorf("stream cycle: %s", r.Error)
	}
	return b.Close()
}

// copyTree copies the directory tree src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	}))
}

// glob1 returns the one file matching pattern under root (relative).
func glob1(t *testing.T, root, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(root, pattern))
	require.NoError(t, err)
	require.NotEmpty(t, m, "no %s in the start-up directory", pattern)
	return m[0]
}

type mutation func(t *testing.T, path string)

// flipMiddle makes flipAt flip the file's middle byte.
const flipMiddle = int64(-1 << 62)

func flipAt(at int64) mutation {
	return func(t *testing.T, path string) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		i := at
		switch {
		case at == flipMiddle:
			i = int64(len(b)) / 2
		case i < 0:
			i += int64(len(b))
		}
		b[i] ^= 0x40
		require.NoError(t, os.WriteFile(path, b, 0o644))
	}
}

func cutBy(n int64) mutation {
	return func(t *testing.T, path string) {
		st, err := os.Stat(path)
		require.NoError(t, err)
		require.NoError(t, os.Truncate(path, st.Size()-n))
	}
}

func appendBytes(s string) mutation {
	return func(t *testing.T, path string) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		require.NoError(t, err)
		_, err = f.WriteString(s)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
}

func removeFile(t *testing.T, path string) { require.NoError(t, os.Remove(path)) }

// serverStart opens the broker on root as `comb serve` does and closes it:
// nil when it starts.
func serverStart(root string) error {
	b, err := broker.Open(broker.Config{DataDir: root, Sync: "never", Logger: zerolog.Nop()})
	if err != nil {
		return err
	}
	return b.Close()
}

// server outcomes at start-up.
const (
	starts     = "starts"       // Open succeeds and changes nothing fsck reports
	repairs    = "repairs"      // Open succeeds and repairs it: fsck is clean after
	refuses    = "refuses"      // Open fails
	ignores    = "ignores"      // Open succeeds without the file's contents (a cache)
	atFirstUse = "at first use" // Open succeeds; the log's first push repairs it
)

// TestFsckAgreesWithStartup: for every file the server reads at start-up,
// a flipped byte, a cut and appended garbage give the fsck exit code and
// finding that match what the server's start-up does with the same bytes
// (issue 21: "fsck reads every file the server reads at start-up, and a file
// the server would refuse is never fsck exit 0"; docs/operations.md, fsck
// findings). Where fsck says repairable, --repair leaves a directory fsck
// calls clean and the server starts on.
func TestFsckAgreesWithStartup(t *testing.T) {
	base := t.TempDir()
	require.NoError(t, buildStartupDir(base))
	garbage := appendBytes("garbage!garbage!garbage!")
	cases := []struct {
		name    string
		pattern string
		damage  mutation
		exit    int
		kind    Kind
		server  string
	}{
		// notes/log: header frame 0..25, then the records (notes.Open's tail rule).
		{"notes: a flipped header byte (the checksum) is damage the server refuses", "notes/log", flipAt(8), ExitDamaged, KindNotesCorrupt, refuses},
		{"notes: a flipped byte with records after it is damage", "notes/log", flipAt(flipMiddle), ExitDamaged, KindNotesCorrupt, refuses},
		{"notes: a flipped last record is a damaged tail the server cuts", "notes/log", flipAt(-1), ExitRepairable, KindNotesTornTail, repairs},
		{"notes: a cut last record is a torn tail the server cuts", "notes/log", cutBy(1), ExitRepairable, KindNotesTornTail, repairs},
		{"notes: garbage after the records is a tail the server cuts", "notes/log", garbage, ExitRepairable, KindNotesTornTail, repairs},
		// meta/maintenance: one frame; anything but that frame is refused.
		{"maintenance: a flipped byte is damage the server refuses", "meta/maintenance", flipAt(flipMiddle), ExitDamaged, KindMaintenanceCorrupt, refuses},
		{"maintenance: a cut file is damage the server refuses", "meta/maintenance", cutBy(1), ExitDamaged, KindMaintenanceCorrupt, refuses},
		{"maintenance: garbage after the frame is damage the server refuses", "meta/maintenance", garbage, ExitDamaged, KindMaintenanceCorrupt, refuses},
		// meta/analytics: a cache of the dashboard's charts.
		{"analytics: a flipped byte is ignored by the server", "meta/analytics", flipAt(flipMiddle), ExitClean, KindAnalyticsIgnored, ignores},
		{"analytics: a cut file is ignored by the server", "meta/analytics", cutBy(1), ExitClean, KindAnalyticsIgnored, ignores},
		{"analytics: garbage after the frame is ignored by the server", "meta/analytics", garbage, ExitClean, KindAnalyticsIgnored, ignores},
		// streams/: each file one frame, the only copy of its state.
		{"streams registry: a flipped byte is damage the server refuses", "streams/queries", flipAt(flipMiddle), ExitDamaged, KindStreamsCorrupt, refuses},
		{"streams registry: a cut file is damage the server refuses", "streams/queries", cutBy(1), ExitDamaged, KindStreamsCorrupt, refuses},
		{"streams registry: garbage after the frame is damage the server refuses", "streams/queries", garbage, ExitDamaged, KindStreamsCorrupt, refuses},
		{"streams snapshot: a flipped byte is damage the server refuses", "streams/*/*", flipAt(flipMiddle), ExitDamaged, KindStreamsCorrupt, refuses},
		{"streams snapshot: a cut file is damage the server refuses", "streams/*/*", cutBy(1), ExitDamaged, KindStreamsCorrupt, refuses},
		{"streams snapshot: garbage after the frame is damage the server refuses", "streams/*/*", garbage, ExitDamaged, KindStreamsCorrupt, refuses},
		// dedup runs: a cache of transactionIds the log re-indexes from its segments.
		{"dedup run: a flipped byte is repairable, rebuilt at the first push", "partitions/*/dedup-*.run", flipAt(flipMiddle), ExitRepairable, KindDedupDamaged, atFirstUse},
		{"dedup run: a cut file is repairable, rebuilt at the first push", "partitions/*/dedup-*.run", cutBy(1), ExitRepairable, KindDedupDamaged, atFirstUse},
		{"dedup run: garbage after it is repairable, rebuilt at the first push", "partitions/*/dedup-*.run", garbage, ExitRepairable, KindDedupDamaged, atFirstUse},
		{"dedup.idx: a flipped entry with entries after it is repairable", "partitions/*/dedup.idx", flipAt(flipMiddle), ExitRepairable, KindDedupDamaged, atFirstUse},
		{"dedup.idx: a cut last entry is a stale tail", "partitions/*/dedup.idx", cutBy(1), ExitRepairable, KindDedupStale, atFirstUse},
		// cursor/: the snapshot is the only copy of the cursors once the commit log is cut.
		{"cursor snapshot: a flipped byte is damage the server refuses", "cursor/snapshot-*", flipAt(flipMiddle), ExitDamaged, KindJournalCorrupt, refuses},
		{"cursor snapshot: a cut file is damage the server refuses", "cursor/snapshot-*", cutBy(1), ExitDamaged, KindJournalCorrupt, refuses},
		{"cursor snapshot: garbage after it is damage the server refuses", "cursor/snapshot-*", garbage, ExitDamaged, KindJournalCorrupt, refuses},
		// DESCRIPTOR: what a rebuild of meta/journal names the directory from.
		{"descriptor: a flipped byte is repairable; the server starts without it", "partitions/*/DESCRIPTOR", flipAt(flipMiddle), ExitRepairable, KindDescriptorDamaged, starts},
		{"descriptor: a cut file is repairable; the server starts without it", "partitions/*/DESCRIPTOR", cutBy(1), ExitRepairable, KindDescriptorDamaged, starts},
		{"descriptor: a missing one is repairable; the server starts without it", "partitions/*/DESCRIPTOR", removeFile, ExitRepairable, KindDescriptorDamaged, starts},
		{"descriptor: garbage after the frame is repairable; the server starts without it", "partitions/*/DESCRIPTOR", garbage, ExitRepairable, KindDescriptorDamaged, starts},
		// meta/journal: record's tail rule.
		{"meta journal: a flipped byte with records after it is damage the server refuses", "meta/journal", flipAt(flipMiddle), ExitDamaged, KindJournalCorrupt, refuses},
		{"meta journal: a flipped last record is a damaged tail the server cuts", "meta/journal", flipAt(-1), ExitRepairable, KindJournalDamagedTail, repairs},
		{"meta journal: a cut last record is a torn tail the server cuts", "meta/journal", cutBy(1), ExitRepairable, KindJournalTornTail, repairs},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			copyTree(t, base, root)
			path := glob1(t, root, c.pattern)
			rel, _ := filepath.Rel(root, path)
			c.damage(t, path)
			rep, err := Run(root, Options{Mode: ModeCheck})
			require.NoError(t, err)
			f := findingOf(rep, c.kind)
			require.NotNil(t, f, "want a %s finding, got %v", c.kind, kinds(rep))
			require.Equal(t, rel, f.File)
			if _, err := os.Stat(path); err == nil {
				require.NotZero(t, f.EndByte, "the finding names its bytes")
			}
			require.Equal(t, c.exit, rep.ExitCode, "%+v", rep.Findings)

			serr := serverStart(root)
			if c.server == refuses {
				require.Error(t, serr, "the server starts where the table says it refuses")
				require.Equal(t, ExitDamaged, rep.ExitCode, "the server refuses this file: fsck must say damaged")
			} else {
				require.NoError(t, serr)
				require.NotEqual(t, ExitDamaged, rep.ExitCode, "the server starts with this file: fsck's damage must be named elsewhere")
			}
			after, err := Run(root, Options{Mode: ModeCheck})
			require.NoError(t, err)
			switch c.server {
			case repairs:
				require.Equal(t, ExitClean, after.ExitCode, "after the server's start: %v", kinds(after))
			case starts, refuses, atFirstUse:
				require.Equal(t, rep.ExitCode, after.ExitCode, "the server's start changed what fsck sees: %v", kinds(after))
			}
			if c.exit != ExitRepairable {
				return
			}
			// Repair on a fresh copy (the server's start above may have
			// repaired the first): it leaves a clean directory the server starts on.
			root2 := t.TempDir()
			copyTree(t, base, root2)
			c.damage(t, filepath.Join(root2, rel))
			fixed, err := Run(root2, Options{Mode: ModeRepair})
			require.NoError(t, err)
			require.Equal(t, ExitRepairable, fixed.ExitCode, "%+v", fixed.Findings)
			require.True(t, findingOf(fixed, c.kind).Repaired, "%+v", fixed.Findings)
			if c.kind == KindNotesTornTail {
				// As the server's start: the cut bytes are kept, named by where they were.
				kept, err := os.ReadFile(filepath.Join(root2, dirQuarantine, dirNotes, fmt.Sprintf("log.from-%d", f.StartByte)))
				require.NoError(t, err, "the cut bytes are kept in quarantine/notes/")
				require.NotEmpty(t, kept)
			}
			again, err := Run(root2, Options{Mode: ModeCheck})
			require.NoError(t, err)
			require.Equal(t, ExitClean, again.ExitCode, "%+v", again.Findings)
			require.NoError(t, serverStart(root2))
		})
	}
}

// findingOf returns rep's first finding of kind k (nil: none).
func findingOf(rep *Report, k Kind) *Finding {
	for i := range rep.Findings {
		if rep.Findings[i].Kind == k {
			return &rep.Findings[i]
		}
	}
	return nil
}
