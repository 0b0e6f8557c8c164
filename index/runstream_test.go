package index

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readAllRun reads every entry of the run file b through a RunReader (with a buffer of
// its own), returning them and the error that ended the reading.
func readAllRun(b []byte) ([]RunEntry, error) {
	x, err := NewRunReader(bytes.NewReader(b), int64(len(b)), nil)
	if err != nil {
		return nil, err
	}
	var got []RunEntry
	for e, ok := x.Next(); ok; e, ok = x.Next() {
		got = append(got, e)
	}
	return got, x.Err()
}

// readAllRunPages is readAllRun through NextPage, mixed with Next: an entry, then pages.
func readAllRunPages(b []byte) ([]RunEntry, error) {
	x, err := NewRunReader(bytes.NewReader(b), int64(len(b)), nil)
	if err != nil {
		return nil, err
	}
	var got []RunEntry
	if e, ok := x.Next(); ok {
		got = append(got, e)
	}
	for ents, ok := x.NextPage(); ok; ents, ok = x.NextPage() {
		for j := range len(ents) / RunEntrySize {
			got = append(got, RunEntryAt(ents, j))
		}
	}
	return got, x.Err()
}

// TestRunStreamRoundTrip: RunEncoder, flushed at any point, writes exactly EncodeRun's bytes,
// and RunReader reads back exactly the entries, across the reader's 16-page reads too.
func TestRunStreamRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, RunPageEntries - 1, RunPageEntries, RunPageEntries + 1, runReadPages*RunPageEntries + 5, 3 * runReadPages * RunPageEntries} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			es := runEntries(n, 10)
			last := uint64(10 + 2*n)
			want := EncodeRun(10, last, es)
			for _, every := range []int{1, 100, 1 << 20} {
				e, err := NewRunEncoder(10, last, n)
				require.NoError(t, err)
				var out bytes.Buffer
				for i, x := range es {
					e.Add(x)
					if i%every == 0 {
						_, err := e.WriteTo(&out)
						require.NoError(t, err)
					}
				}
				require.NoError(t, e.Close())
				_, err = e.WriteTo(&out)
				require.NoError(t, err)
				assert.Equal(t, want, out.Bytes(), "written every %d", every)
				assert.Equal(t, n, e.Header().Count)
			}
			// Aligned prefixes (the dedup index's 2 MiB writes, here 1,000 bytes).
			e, err := NewRunEncoder(10, last, n)
			require.NoError(t, err)
			var out bytes.Buffer
			for _, x := range es {
				e.Add(x)
				if k := 1000 - out.Len()%1000; e.Buffered() >= k {
					require.NoError(t, e.WritePrefix(&out, k))
					require.Zero(t, out.Len()%1000)
				}
			}
			require.NoError(t, e.Close())
			require.Error(t, e.WritePrefix(&out, e.Buffered()+1))
			_, err = e.WriteTo(&out)
			require.NoError(t, err)
			assert.Equal(t, want, out.Bytes(), "aligned prefixes")
			got, err := readAllRun(want)
			require.NoError(t, err)
			byPage, err := readAllRunPages(want)
			require.NoError(t, err)
			assert.Equal(t, got, byPage)
			assert.Len(t, got, n)
			if n > 0 {
				assert.Equal(t, es, got)
			}
		})
	}
}

// TestRunEncoderRejects: out-of-order, out-of-range and surplus entries and a count not
// reached are Close's error (ErrRun), never a file that would not verify.
func TestRunEncoderRejects(t *testing.T) {
	_, err := NewRunEncoder(0, 5, 1)
	assert.ErrorIs(t, err, ErrRun)
	_, err = NewRunEncoder(5, 6, 3)
	assert.ErrorIs(t, err, ErrRun)
	for name, add := range map[string][]RunEntry{
		"order":   {{Hash: 9, Offset: 1}, {Hash: 8, Offset: 2}},
		"equal":   {{Hash: 9, Offset: 1}, {Hash: 9, Offset: 1}},
		"range":   {{Hash: 9, Offset: 11}},
		"surplus": {{Hash: 1, Offset: 1}, {Hash: 2, Offset: 2}, {Hash: 3, Offset: 3}},
		"short":   {{Hash: 1, Offset: 1}},
	} {
		e, err := NewRunEncoder(1, 10, 2)
		require.NoError(t, err)
		for _, x := range add {
			e.Add(x)
		}
		assert.ErrorIs(t, e.Close(), ErrRun, name)
	}
}

// TestRunReaderDamage: a page that fails its check ends the reading at it, after exactly the
// entries of the pages before it; a short file or a bad header fails before any entry.
func TestRunReaderDamage(t *testing.T) {
	n := 2*runReadPages*RunPageEntries + 10
	good := EncodeRun(1, uint64(2*n), runEntries(n, 1))
	for _, page := range []int{0, 1, runReadPages - 1, runReadPages, runReadPages + 3, 2 * runReadPages} {
		b := append([]byte(nil), good...)
		at, _ := RunHeader{Count: n}.Page(page)
		b[at+20] ^= 0x40
		got, err := readAllRun(b)
		assert.ErrorIs(t, err, ErrRun, "page %d", page)
		assert.Len(t, got, page*RunPageEntries, "page %d", page)
	}
	_, err := readAllRun(good[:len(good)-1])
	assert.ErrorIs(t, err, ErrRun)
	b := append([]byte(nil), good...)
	b[9] ^= 1
	_, err = readAllRun(b)
	assert.ErrorIs(t, err, ErrRun)
	// A read error is the reader's error as it is.
	boom := errors.New("boom")
	x, err := NewRunReader(failAfter{bytes.NewReader(good), RunHeaderSize + 1}, int64(len(good)), nil)
	require.NoError(t, err)
	_, ok := x.Next()
	assert.False(t, ok)
	assert.EqualError(t, x.Err(), boom.Error())
}

// failAfter fails every read that reaches past byte n.
type failAfter struct {
	r *bytes.Reader
	n int64
}

func (f failAfter) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.n {
		return 0, errors.New("boom")
	}
	return f.r.ReadAt(p, off)
}

// FuzzRunReader: RunReader never panics and agrees with ScanRun (the load's and fsck's
// decoder) on every input: the same verdict, and the entries of the same pages.
func FuzzRunReader(f *testing.F) {
	f.Add(EncodeRun(1, 1, nil))
	f.Add(EncodeRun(5, 40, runEntries(3, 5)))
	f.Add(EncodeRun(1, 1000, runEntries(RunPageEntries+1, 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		var want []RunEntry
		_, werr := ScanRun(data, func(_ int, e RunEntry) { want = append(want, e) })
		got, err := readAllRun(data)
		byPage, perr := readAllRunPages(data)
		if (perr == nil) != (err == nil) || len(byPage) != len(got) {
			t.Fatalf("by page: %d entries, error %v; by entry: %d, error %v", len(byPage), perr, len(got), err)
		}
		if (err == nil) != (werr == nil) {
			t.Fatalf("RunReader error %v, ScanRun error %v", err, werr)
		}
		if len(got) != len(want) {
			t.Fatalf("RunReader read %d entries, ScanRun %d", len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("entry %d: %v, ScanRun %v", i, got[i], want[i])
			}
		}
	})
}
