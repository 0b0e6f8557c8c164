//go:build corpus

// A generator, not a check: behind the corpus build tag so that no skipped
// test shows up in a normal run.

package segment

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/require"
)

// TestWriteSeedCorpus regenerates testdata/fuzz/FuzzSegmentDecoder (`go test -tags
// corpus -run TestWriteSeedCorpus`): whole files for every codec, a rotated-away segment,
// a torn tail and a flipped byte.
func TestWriteSeedCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzSegmentDecoder")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	write := func(name string, b []byte) {
		body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	for _, codec := range []Codec{CodecNone, CodecS2, CodecZstd} {
		fs := vfs.NewMem()
		l, _, err := openLog(fs, "/p", Options{Codec: codec, MinCompressBytes: -1})
		require.NoError(t, err)
		_, err = l.Append(1_700_000_000_000_000, recs(0, 3, 60))
		require.NoError(t, err)
		_, err = l.Append(1_700_000_000_000_001, []Record{{TransactionID: "ü", TraceID: "t", ProducerSub: "s",
			Payload: []byte(`{"name":"Zoë","city":"東京"}`), Extra: []byte{1}}})
		require.NoError(t, err)
		require.NoError(t, l.Close())
		b := fs.Bytes("/p/" + segName(1))
		write(fmt.Sprintf("%s-two-segments", codec), b)
		write(fmt.Sprintf("%s-torn-tail", codec), b[:len(b)-5])
		flipped := append([]byte(nil), b...)
		flipped[HeaderSize+2] ^= 0x10
		write(fmt.Sprintf("%s-flipped-payload", codec), flipped)
	}
	write("partial-header", []byte("CMBS\x01\x00"))
	write("zeros", make([]byte, 100))
}
