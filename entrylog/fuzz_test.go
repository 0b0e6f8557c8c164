package entrylog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/require"
)

// FuzzDecodeEntry: any body decodes or fails with ErrCorrupt, never panics;
// what decodes re-encodes to the same bytes.
func FuzzDecodeEntry(f *testing.F) {
	g := newSegs(f, "f")
	f.Add(appendSegmentBody(nil, pid(1), g.next(2)))
	f.Add(appendTrimBody(nil, pid(2), 7))
	f.Add(appendTrimBody(nil, pid(2), Dropped))
	f.Add([]byte{KindSegment})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := DecodeEntry(body)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		var again []byte
		switch e.Kind {
		case KindSegment:
			again = appendSegmentBody(nil, e.Partition, e.Segment)
		case KindTrim:
			again = appendTrimBody(nil, e.Partition, e.Before)
		default:
			t.Fatalf("kind %d decoded", e.Kind)
		}
		require.Equal(t, body, again)
	})
}

// FuzzOpenFile: any bytes as an entry log file: Open never panics, refuses
// exactly what Check calls damage, and what it opens reads back (every
// indexed segment verifies or fails with ErrCorrupt).
func FuzzOpenFile(f *testing.F) {
	fs := vfs.NewMem()
	l, _, err := Open("/s", Options{FS: fs})
	require.NoError(f, err)
	g := newSegs(f, "f")
	for i := 0; i < 3; i++ {
		_, err := l.Append(pid(i), g.next(1))
		require.NoError(f, err)
	}
	require.NoError(f, l.Trim(pid(1), Dropped))
	require.NoError(f, l.Sync())
	_, err = l.Append(pid(0), g.next(1))
	require.NoError(f, err)
	require.NoError(f, l.Close())
	good := fs.Bytes("/s/" + FileName(1))
	f.Add(good)
	f.Add(good[:len(good)-7])
	f.Add(good[:HeaderSize])
	bad := bytes.Clone(good)
	bad[HeaderSize+20] ^= 1
	f.Add(bad)
	slot := bytes.Clone(good)
	binary.LittleEndian.PutUint64(slot[32:], 1<<40)
	f.Add(slot)
	f.Fuzz(func(t *testing.T, data []byte) {
		fs := vfs.NewMem()
		fs.SetBytes("/s/"+FileName(1), data)
		chk, err := Check(fs, "/s")
		require.NoError(t, err)
		l, _, err := Open("/s", Options{FS: fs, NoSync: true})
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			require.True(t, chk.Damaged(), "Open refused what Check did not call damage: %v", err)
			var ce *CorruptionError
			require.True(t, errors.As(err, &ce))
			return
		}
		defer l.Close()
		require.False(t, chk.Damaged())
		require.Equal(t, chk.Partitions, l.Stats().Partitions)
		for id, exts := range chk.Segments {
			require.Equal(t, exts, l.Extents(id))
			for _, e := range exts {
				if _, err := l.Segment(id, e.Base, nil); err != nil {
					require.ErrorIs(t, err, ErrCorrupt)
				}
			}
		}
	})
}
