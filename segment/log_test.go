package segment

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTripEveryCodecAndPayloadSize(t *testing.T) {
	big := func(n int) []byte { // compressible JSON of n bytes
		b := bytes.Repeat([]byte(`{"k":"v"},`), n/10+1)[:n]
		return b
	}
	payloads := []struct {
		name    string
		payload []byte
	}{
		{"0 B", []byte{}},
		{"1 B", []byte("1")},
		{"non-ASCII JSON", []byte(`{"name":"Zoë","city":"東京","emoji":"🐝","rtl":"שלום"}`)},
		{"1 MiB", big(1 << 20)},
		{"16 MiB", big(16 << 20)},
	}
	for _, codec := range []Codec{CodecNone, CodecS2, CodecZstd} {
		for _, p := range payloads {
			t.Run(codec.String()+"/"+p.name, func(t *testing.T) {
				dir := t.TempDir()
				l, _, err := Open(dir, Options{Codec: codec, MinCompressBytes: -1})
				require.NoError(t, err)
				r := Record{ID: [16]byte{1, 2, 3}, TransactionID: "tx-ü", TraceID: "trace", ProducerSub: "sub-é",
					Payload: p.payload, Extra: []byte{0, 1}}
				rs := []Record{r, {ID: [16]byte{9}, TransactionID: "second", Payload: p.payload}}
				first, err := l.Append(1_700_000_000_000_000, rs)
				require.NoError(t, err)
				require.Equal(t, uint64(1), first)
				check := func(l *Log) {
					var rb ReadBuffer
					msgs, err := l.Read(1, 10, 0, &rb)
					require.NoError(t, err)
					require.Len(t, msgs, 2)
					for i := range rs {
						assert.Equal(t, uint64(i+1), msgs[i].Offset)
						assert.Equal(t, int64(1_700_000_000_000_000), msgs[i].TimestampMicros)
						requireRecord(t, rs[i], msgs[i])
					}
				}
				check(l)
				require.NoError(t, l.Close())
				l, rep, err := Open(dir, Options{})
				require.NoError(t, err)
				assert.False(t, rep.Repaired())
				check(l)
				require.NoError(t, l.Close())
			})
		}
	}
}

// storedCodec returns the codec in the header of the segment at pos of file.
func storedCodec(t *testing.T, fs *vfs.Mem, name string, pos int) Codec {
	b := fs.Bytes(name)
	h, err := parseHeader(b[pos:])
	require.NoError(t, err)
	return h.codec
}

func TestCodecChoice(t *testing.T) {
	json := recs(0, 100, 200) // 100 × 200 B JSON: compressible, above MinCompressBytes
	random := []Record{{TransactionID: "r", Payload: bytes.Repeat([]byte{0}, 0)}}
	noise := make([]byte, 4096)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	random[0].Payload = noise
	cases := []struct {
		name string
		opts Options
		recs []Record
		want Codec
	}{
		{"preferred codec used when it pays", Options{Codec: CodecS2}, json, CodecS2},
		{"zstd when asked", Options{Codec: CodecZstd}, json, CodecZstd},
		{"below MinCompressBytes stays plain", Options{Codec: CodecS2}, json[:1], CodecNone},
		{"segment that does not shrink stays plain", Options{Codec: CodecS2, MinCompressBytes: -1}, random, CodecNone},
		{"CodecNone never compresses", Options{}, json, CodecNone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := vfs.NewMem()
			l, _ := openMem(t, fs, c.opts)
			_, err := l.Append(5, c.recs)
			require.NoError(t, err)
			require.NoError(t, l.Close())
			assert.Equal(t, c.want, storedCodec(t, fs, "/p/"+segName(1), 0))
		})
	}
}

func TestReadBudgets(t *testing.T) {
	l, _ := openMem(t, vfs.NewMem(), Options{})
	for i := 0; i < 5; i++ {
		_, err := l.Append(int64(i), recs(i*10, 10, 100)) // offsets 10i+1 .. 10i+10
		require.NoError(t, err)
	}
	var rb ReadBuffer
	cases := []struct {
		name              string
		from              uint64
		maxMsgs, maxBytes int
		wantFirst         uint64
		wantN             int
	}{
		{"message budget inside a segment", 3, 4, 0, 3, 4},
		{"message budget across segments", 8, 15, 0, 8, 15},
		{"from 0 reads from FirstOffset", 0, 2, 0, 1, 2},
		{"byte budget stops once reached", 1, 100, 250, 1, 3},
		{"at least one message even above maxBytes", 7, 100, 1, 7, 1},
		{"maxMsgs below 1 means 1", 12, 0, 0, 12, 1},
		{"tail shorter than budget", 45, 100, 0, 45, 6},
		{"from NextOffset returns nothing", 51, 10, 0, 0, 0},
		{"from past NextOffset returns nothing", 500, 10, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msgs, err := l.Read(c.from, c.maxMsgs, c.maxBytes, &rb)
			require.NoError(t, err)
			require.Len(t, msgs, c.wantN)
			for i, m := range msgs {
				assert.Equal(t, c.wantFirst+uint64(i), m.Offset)
				assert.Equal(t, int64((m.Offset-1)/10), m.TimestampMicros)
				requireRecord(t, rec(int(m.Offset-1), 100), m)
			}
		})
	}
}

func TestStringsOutliveTheReadBuffer(t *testing.T) {
	l, _ := openMem(t, vfs.NewMem(), Options{})
	_, err := l.Append(1, recs(0, 3, 50))
	require.NoError(t, err)
	var rb ReadBuffer
	msgs, err := l.Read(1, 3, 0, &rb)
	require.NoError(t, err)
	tx := msgs[0].TransactionID
	_, err = l.Append(2, []Record{{TransactionID: "zzzzz-overwrite", Payload: []byte("1")}})
	require.NoError(t, err)
	_, err = l.Read(4, 1, 0, &rb)
	require.NoError(t, err)
	assert.Equal(t, "tx-0", tx)
}

func TestTimestampsNeverGoBackwards(t *testing.T) {
	l, _ := openMem(t, vfs.NewMem(), Options{})
	_, err := l.Append(500, recs(0, 1, 10))
	require.NoError(t, err)
	_, err = l.Append(400, recs(1, 1, 10)) // clock stepped back
	require.NoError(t, err)
	msgs := readAll(t, l, 1)
	assert.Equal(t, int64(500), msgs[1].TimestampMicros)
	assert.Equal(t, int64(500), l.LastTimestamp())
}

func TestAppendErrors(t *testing.T) {
	l, _ := openMem(t, vfs.NewMem(), Options{})
	_, err := l.Append(1, nil)
	assert.ErrorIs(t, err, ErrEmptySegment)
	require.NoError(t, l.Close())
	_, err = l.Append(1, recs(0, 1, 10))
	assert.ErrorIs(t, err, ErrClosed)
	var rb ReadBuffer
	_, err = l.Read(1, 1, 0, &rb)
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, l.Close(), ErrClosed)
}

func TestRotationBySizeAndAge(t *testing.T) {
	t.Run("size", func(t *testing.T) {
		fs := vfs.NewMem()
		l, _ := openMem(t, fs, Options{MaxFileBytes: 1000})
		for i := 0; i < 10; i++ {
			_, err := l.Append(int64(i), recs(i*5, 5, 100)) // ~600 B a segment
			require.NoError(t, err)
		}
		names, _ := fs.List("/p")
		var segs []string
		for _, n := range names {
			if strings.HasSuffix(n, ".seg") {
				segs = append(segs, n)
			}
		}
		// a file takes segments until it reaches 1000 B: two a file
		assert.Equal(t, []string{segName(1), segName(11), segName(21), segName(31), segName(41)}, segs)
		assert.Len(t, readAll(t, l, 1), 50)
		require.NoError(t, l.Close())
		l, rep := openMem(t, fs, Options{MaxFileBytes: 1000})
		assert.False(t, rep.Repaired(), "%+v", rep)
		assert.Equal(t, uint64(51), l.NextOffset())
		assert.Len(t, readAll(t, l, 1), 50)
	})
	t.Run("age", func(t *testing.T) {
		fs := vfs.NewMem()
		l, _ := openMem(t, fs, Options{MaxFileAge: 10 * time.Millisecond}) // 10,000 µs of segment timestamps
		for _, ts := range []int64{0, 5_000, 9_999, 10_000, 19_000, 20_000} {
			_, err := l.Append(ts, recs(int(ts), 1, 10))
			require.NoError(t, err)
		}
		names, _ := fs.List("/p")
		var segs []string
		for _, n := range names {
			if strings.HasSuffix(n, ".seg") {
				segs = append(segs, n)
			}
		}
		assert.Equal(t, []string{segName(1), segName(4), segName(6)}, segs)
	})
}

func TestDeleteFilesBefore(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{MaxFileBytes: 1000})
	for i := 0; i < 10; i++ {
		_, err := l.Append(int64(i*10), recs(i*5, 5, 100))
		require.NoError(t, err)
	}
	// files start at 1, 11, 21, 31, 41
	cases := []struct {
		name      string
		before    uint64
		wantFiles int
		wantFirst uint64
	}{
		{"nothing below the first file's end", 10, 0, 1},
		{"a file goes once its last offset is below", 11, 1, 11},
		{"whole files only", 25, 1, 21},
		{"never the active file", 1000, 2, 41},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, bytes, err := l.DeleteFilesBefore(c.before)
			require.NoError(t, err)
			assert.Equal(t, c.wantFiles, n)
			if n > 0 {
				assert.Positive(t, bytes)
			}
			assert.Equal(t, c.wantFirst, l.FirstOffset())
			got := readAll(t, l, 0)
			require.Len(t, got, int(51-c.wantFirst))
			assert.Equal(t, c.wantFirst, got[0].Offset)
		})
	}
	require.NoError(t, l.Close())
	l, rep := openMem(t, fs, Options{MaxFileBytes: 1000})
	assert.False(t, rep.Repaired())
	assert.Equal(t, uint64(41), l.FirstOffset())
	assert.Equal(t, uint64(51), l.NextOffset())
}

func TestReadConcurrentWithAppend(t *testing.T) {
	l, _ := openMem(t, vfs.NewMem(), Options{MaxFileBytes: 4096, Codec: CodecS2, MinCompressBytes: -1})
	const segs = 200
	done := make(chan struct{})
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var rb ReadBuffer
			next := uint64(1)
			for next <= segs*5 {
				msgs, err := l.Read(next, 7, 0, &rb)
				if !assert.NoError(t, err) {
					return
				}
				for _, m := range msgs {
					if !assert.Equal(t, next, m.Offset) || !assert.Equal(t, "tx-"+strconv.Itoa(int(next-1)), m.TransactionID) {
						return
					}
					next++
				}
				select {
				case <-done:
					if len(msgs) == 0 && next > segs*5 {
						return
					}
				default:
				}
			}
		}()
	}
	for i := 0; i < segs; i++ {
		_, err := l.Append(int64(i), recs(i*5, 5, 100))
		require.NoError(t, err)
	}
	close(done)
	wg.Wait()
}
