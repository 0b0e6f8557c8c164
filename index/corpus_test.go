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

	b := make([]byte, DedupHeaderSize)
	PutDedupHeader(b)
	for i := uint64(1); i <= 4; i++ {
		b = AppendDedupEntry(b, i*977, i)
	}
	write("FuzzDedupFile", "four-entries", q(b))
	write("FuzzDedupFile", "torn", q(b[:len(b)-3]))
	write("FuzzDedupFile", "not-increasing", q(AppendDedupEntry(b, 5, 2)))
}
