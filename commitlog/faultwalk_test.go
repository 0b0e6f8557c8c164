package commitlog

import (
	"fmt"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

// walk appends 60 entries (rotating through 4 KiB files and truncating once)
// and returns how many were acknowledged before the first failure.
func walk(fsys vfs.FS) (acked int) {
	l, _, err := Open(testDir, Options{FS: fsys, FileBytes: 4 << 10})
	if err != nil {
		return 0
	}
	defer l.Close()
	for i := 1; i <= 60; i++ {
		tk, err := l.Append(byte(i%7), payload(i))
		if err != nil || tk.Wait() != nil {
			return acked
		}
		acked = i
		if i == 40 {
			if l.TruncateBefore(20) != nil {
				return acked
			}
		}
	}
	return acked
}

// TestFaultWalk fails every n-th call of every kind of write and sync
// boundary with ENOSPC (short writes) and EIO, crashes, and reopens without
// faults: Open never refuses, every acknowledged entry is there with its
// contents, and nothing but appended entries is.
func TestFaultWalk(t *testing.T) {
	rec := errorfs.New(vfs.NewStrictMem("/data"))
	rec.Record()
	require.Equal(t, 60, walk(rec))
	counts := map[errorfs.Op]int{}
	for _, c := range rec.Trace() {
		if c.Op != errorfs.OpRead {
			counts[c.Op]++
		}
	}
	var ops []errorfs.Op
	for op := range counts {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i] < ops[j] })
	runs := 0
	for _, op := range ops {
		for k := 0; k < counts[op]; k++ {
			for _, e := range []error{unix.ENOSPC, unix.EIO} {
				name := fmt.Sprintf("%s#%d/%v", op, k, e)
				m := vfs.NewStrictMem("/data")
				fy := errorfs.New(m)
				fy.Inject(errorfs.Fault{Op: op, Skip: k, Count: 1, Err: e, Short: op == errorfs.OpWrite})
				acked := walk(fy)
				l, _, err := Open(testDir, Options{FS: m.Crash(false), FileBytes: 4 << 10})
				require.NoError(t, err, name)
				var got []Entry
				require.NoError(t, l.Read(l.FirstLSN(), func(e Entry) error {
					require.Equal(t, byte(int(e.LSN)%7), e.Kind, name)
					require.Equal(t, payload(int(e.LSN)), e.Payload, name)
					got = append(got, e)
					return nil
				}))
				last := LSN(0)
				if len(got) > 0 {
					last = got[len(got)-1].LSN
				}
				require.GreaterOrEqual(t, int(last), acked, "%s: acknowledged entries survive", name)
				require.NoError(t, l.Close())
				runs++
			}
		}
	}
	t.Logf("%d runs", runs)
}

// FuzzOpen: any bytes in the newest file open without a panic, and what
// opens reads back.
func FuzzOpen(f *testing.F) {
	m := vfs.NewMem()
	l, _, _ := Open(testDir, Options{FS: m, FileBytes: 4 << 10})
	for i := 1; i <= 5; i++ {
		tk, _ := l.Append(1, payload(i))
		tk.Wait()
	}
	path := l.files[len(l.files)-1].path
	l.Close()
	f.Add(m.Bytes(path)[:300])
	f.Fuzz(func(t *testing.T, data []byte) {
		m := vfs.NewMem()
		m.SetBytes(testDir+"/0000000000000001.wal", data)
		l, _, err := Open(testDir, Options{FS: m, FileBytes: 4 << 10})
		if err != nil {
			return
		}
		require.NoError(t, l.Read(1, func(Entry) error { return nil }))
		l.Close()
	})
}
