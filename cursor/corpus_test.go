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
	write := func(target, name string, b []byte) {
		dir := filepath.Join("testdata", "fuzz", target)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b), 0o644))
	}
	ck := sampleFrame(kindCheckpoint)
	write("FuzzDecodeCheckpoint", "every-entry-kind", ck)
	write("FuzzDecodeCheckpoint", "torn-body", ck[:len(ck)-5])
	write("FuzzDecodeCheckpoint", "header-only", ck[:frameHeaderLen])
	empty := newEncoder()
	empty.begin(kindCheckpoint, 1)
	write("FuzzDecodeCheckpoint", "empty-body", empty.finish())
	write("FuzzDecodeSnapshot", "every-entry-kind", sampleFrame(kindSnapshot))
	write("FuzzDecodeSnapshot", "checkpoint-not-snapshot", ck)
	write("FuzzDecodeBody", "every-entry-kind", ck[frameHeaderLen:])
	write("FuzzDecodeBody", "unknown-tag", []byte{9})
}
