package cursor

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/vfs"
)

func pid(b byte) [16]byte { return [16]byte{0: 0x01, 15: b} }

// openT opens an Engine in dir and closes it at the end of the test if the
// test did not.
func openT(t testing.TB, dir string, opts Options) (*Engine, *RecoveryReport) {
	t.Helper()
	e, rep, err := Open(dir, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e, rep
}

// crashCopy copies dir as a crash would leave it: between two file-level
// changes of the writer (fileMu), without Close's final checkpoint.
func crashCopy(t testing.TB, e *Engine, dst string) {
	t.Helper()
	e.fileMu.Lock()
	defer e.fileMu.Unlock()
	copyDir(t, e.dir, dst)
}

func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dst, 0o755))
	ents, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, ent := range ents {
		b, err := os.ReadFile(filepath.Join(src, ent.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, ent.Name()), b, 0o644))
	}
}

// dump is everything an Engine holds, in comparable form.
type dump struct {
	States  map[Key]lease.State
	Subs    map[subKey]Subscription
	Records []Record
}

func dumpOf(e *Engine) dump {
	d := dump{States: map[Key]lease.State{}, Subs: map[subKey]Subscription{}, Records: e.Records()}
	e.Range(func(k Key, s lease.State) bool { d.States[k] = s; return true })
	e.RangeSubscriptions(func(q, g string, s Subscription) bool { d.Subs[subKey{q, g}] = s; return true })
	if len(d.Records) == 0 {
		d.Records = nil
	}
	return d
}

// listDir lists the journal and snapshot files in dir (on the real disk).
func listDir(t testing.TB, dir string) dirFiles {
	t.Helper()
	files, err := (&Engine{fs: vfs.OS, dir: dir}).listFiles()
	require.NoError(t, err)
	return files
}

// addRecord adds a redo record and returns its id.
func addRecord(t testing.TB, e *Engine, rec string) uint64 {
	t.Helper()
	id, err := e.AddRecord([]byte(rec))
	require.NoError(t, err)
	return id
}

// journalFiles returns the journal file names in dir, oldest first.
func journalFiles(t testing.TB, dir string) []string {
	t.Helper()
	files := listDir(t, dir)
	var out []string
	for _, f := range files.journals {
		out = append(out, f.name)
	}
	return out
}

// journalEnd is the logical end of the journal at path: the byte after its
// last whole checkpoint (the preallocated zeros after it are not counted).
func journalEnd(t testing.TB, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s, err := checkpointFormat.Scan(b, nil)
	require.NoError(t, err)
	return s.End
}
