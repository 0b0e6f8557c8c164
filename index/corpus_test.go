//go:build corpus

// A generator, not a check: behind the corpus build tag so that no skipped
// test shows up in a normal run.

package index

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWriteSeedCorpus regenerates testdata/fuzz (`go test -tags corpus -run TestWriteSeedCorpus`).
func TestWriteSeedCorpus(t *testing.T) {
	q := func(b []byte) string { return "[]byte(" + strconv.Quote(string(b)) + ")" }
	write := func(target, name string, lines ...string) {
		dir := filepath.Join("testdata", "fuzz", target)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		body := "go test fuzz v1\n"
		for _, l := range lines {
			body += l + "\n"
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	back := build(t, sample())
	full := back.b[:HeaderSize+4*EntrySize]
	write("FuzzIndexReader", "four-entries", q(full), "uint64(17)", "int64(200)")
	write("FuzzIndexReader", "torn-entry", q(full[:len(full)-9]), "uint64(26)", "int64(301)")
	flipped := append([]byte(nil), full...)
	flipped[HeaderSize+EntrySize+4] ^= 1
	write("FuzzIndexReader", "flipped-entry", q(flipped), "uint64(15)", "int64(150)")
	write("FuzzIndexReader", "header-only", q(full[:HeaderSize]), "uint64(11)", "int64(0)")

	b := dedupFile(4)
	write("FuzzDedupFile", "four-entries", q(b))
	write("FuzzDedupFile", "torn", q(b[:len(b)-3]))
	flippedDedup := append([]byte(nil), b...)
	flippedDedup[DedupHeaderSize+DedupEntrySize+3] ^= 8
	write("FuzzDedupFile", "flipped-entry", q(flippedDedup))
	chain := DedupChainAt(b, int64(len(b)))
	write("FuzzDedupFile", "not-increasing", q(AppendDedupEntry(append([]byte(nil), b...), &chain, 5, 2)))
	v1 := make([]byte, DedupHeaderSize+16)
	copy(v1, "CMBD\x01")
	write("FuzzDedupFile", "version-1", q(v1))
}
