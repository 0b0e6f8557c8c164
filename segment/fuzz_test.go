package segment

import (
	"errors"
	"testing"

	"github.com/combmq/comb/vfs"
)

// FuzzSegmentDecoder: any bytes as a segment file must open, verify and read
// without panicking; damage is reported as ErrCorrupt, never skipped, and
// what Open keeps must read back without error.
func FuzzSegmentDecoder(f *testing.F) {
	for _, codec := range []Codec{CodecNone, CodecS2, CodecZstd} {
		fs := vfs.NewMem()
		l, _, _ := openLog(fs, "/p", Options{Codec: codec, MinCompressBytes: -1})
		_, _ = l.Append(100, recs(0, 3, 40))
		_, _ = l.Append(200, recs(3, 2, 10))
		_ = l.Close()
		f.Add(fs.Bytes("/p/" + segName(1)))
	}
	f.Add([]byte("CMBS\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := vfs.NewMem()
		_ = fs.MkdirAll("/p")
		fs.SetBytes("/p/"+segName(1), data)
		_, err := verifyFS(fs, "/p", func(ce *CorruptionError) {
			if !errors.Is(ce, ErrCorrupt) || ce.StartByte > ce.EndByte || ce.EndByte > int64(len(data)) {
				t.Fatalf("bad report %+v", ce)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		l, rep, err := openLog(fs, "/p", Options{})
		if err != nil {
			return // the newest file is torn, never fatal: only I/O errors land here
		}
		if rep.TruncatedBytes < 0 || rep.TruncatedBytes > int64(len(data)) {
			t.Fatalf("truncated %d of %d bytes", rep.TruncatedBytes, len(data))
		}
		var rb ReadBuffer
		for from := uint64(1); from < l.NextOffset(); {
			msgs, err := l.Read(from, 3, 0, &rb)
			if err != nil {
				t.Fatalf("read of a recovered log at %d: %v", from, err)
			}
			if len(msgs) == 0 || msgs[0].Offset != from {
				t.Fatalf("read at %d returned %d messages", from, len(msgs))
			}
			from = msgs[len(msgs)-1].Offset + 1
		}
		_ = l.Close()
	})
}
