//go:build corpus

// A generator, not a check: behind the corpus build tag so that no skipped
// test shows up in a normal run.

package cursor

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/record"
)

// TestWriteFuzzCorpus regenerates testdata/fuzz (`go test -tags corpus -run TestWriteFuzzCorpus`).
func TestWriteFuzzCorpus(t *testing.T) {
	require.NoError(t, os.RemoveAll(filepath.Join("testdata", "fuzz")))
	write := func(target, name string, b []byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b), 0o644))
	}
	ck := checkpointFrame(7, sampleEntries())
	write("FuzzDecodeCheckpoint", "every-entry-kind", ck)
	write("FuzzDecodeCheckpoint", "torn-body", ck[:len(ck)-5])
	write("FuzzDecodeCheckpoint", "header-only", ck[:record.HeaderSize])
	write("FuzzDecodeCheckpoint", "no-entries", checkpointFrame(1, nil))
	write("FuzzDecodeSnapshot", "every-entry-kind", snapshotFile(7, sampleEntries()))
	write("FuzzDecodeSnapshot", "empty", snapshotFile(0, nil))
	write("FuzzDecodeSnapshot", "checkpoint-not-snapshot", ck)
	write("FuzzDecodeBody", "every-entry-kind", ck[record.HeaderSize+seqLen:])
	write("FuzzDecodeBody", "unknown-tag", []byte{9})
	write("FuzzDecodeV1", "checkpoint", v1Frame(v1KindCheckpoint, 3, sampleV1Body()))
	write("FuzzDecodeV1", "snapshot", v1Frame(v1KindSnapshot, 3, sampleV1Body()))
	two := append(checkpointFrame(1, sampleEntries()[:2]), checkpointFrame(2, sampleEntries()[3:])...)
	write("FuzzRecoverJournal", "two-checkpoints", two)
	write("FuzzRecoverJournal", "torn-then-zeros", append(two[:len(two)-3], make([]byte, 40)...))
	write("FuzzRecoverJournal", "zero-header-then-garbage", append(append(append([]byte(nil), two...), make([]byte, 16)...), 'x'))
	write("FuzzSnapshotStructure", "header-entries-trailer", unframed(snapshotFormat, snapshotFile(7, sampleEntries()[:3])))
	write("FuzzSnapshotStructure", "empty", unframed(snapshotFormat, snapshotFile(0, nil)))
	write("FuzzReplayCheckpoints", "two-checkpoints", unframed(checkpointFormat, append(checkpointFrame(1, sampleEntries()[:2]), checkpointFrame(2, sampleEntries()[3:5])...)))
	write("FuzzReplayCheckpoints", "sequence-gap", unframed(checkpointFormat, append(checkpointFrame(1, nil), checkpointFrame(3, nil)...)))
}
