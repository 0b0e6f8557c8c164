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
)

// TestWriteFuzzCorpus regenerates testdata/fuzz (`go test -tags corpus -run TestWriteFuzzCorpus`).
func TestWriteFuzzCorpus(t *testing.T) {
	require.NoError(t, os.RemoveAll(filepath.Join("testdata", "fuzz")))
	write := func(target, name string, b []byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b), 0o644))
	}
	ck := checkpointBody(sampleEntries())
	write("FuzzDecodeCheckpoint", "every-entry-kind", ck)
	write("FuzzDecodeCheckpoint", "cut", ck[:len(ck)-5])
	write("FuzzDecodeCheckpoint", "empty", checkpointBody(nil))
	write("FuzzDecodeCheckpoint", "format-2-version", append([]byte{2}, ck[1:]...))
	write("FuzzDecodeCheckpoint", "record-tag", append(append([]byte(nil), ck...), tagRecord, 1, 1, 'x'))
	snap := snapshotFile(7, sampleEntries(), [][]byte{[]byte("redo")})
	write("FuzzDecodeSnapshot", "every-frame-kind", snap)
	write("FuzzDecodeSnapshot", "empty", snapshotFile(1, nil, nil))
	write("FuzzDecodeSnapshot", "cut-trailer", snap[:len(snap)-4])
	write("FuzzSnapshotStructure", "header-entries-legacy-trailer", unframed(snapshotFormat, snapshotFile(7, sampleEntries()[:3], [][]byte{[]byte("r")})))
	write("FuzzSnapshotStructure", "empty", unframed(snapshotFormat, snapshotFile(1, nil, nil)))
	write("FuzzDecodeV1", "checkpoint", v1Frame(v1KindCheckpoint, 3, sampleV1Body()))
	write("FuzzDecodeV1", "snapshot", v1Frame(v1KindSnapshot, 3, sampleV1Body()))
	two := append(v2CheckpointFrame(1, sampleV2Entries()[:2]), v2CheckpointFrame(2, sampleV2Entries()[3:])...)
	write("FuzzUpgradeV2Journal", "two-checkpoints", two)
	write("FuzzUpgradeV2Journal", "torn-then-zeros", append(two[:len(two)-3], make([]byte, 40)...))
	write("FuzzUpgradeV2Journal", "zero-header-then-garbage", append(append(append([]byte(nil), two...), make([]byte, 16)...), 'x'))
	write("FuzzUpgradeV2Checkpoints", "two-checkpoints", unframed(v2CheckpointFormat, two))
	write("FuzzUpgradeV2Checkpoints", "sequence-gap", unframed(v2CheckpointFormat, append(v2CheckpointFrame(1, nil), v2CheckpointFrame(3, nil)...)))
}
