package replica

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// An archive of a directory extracts to the same files; a file gone before
// it is read is skipped; the stream is exactly archiveSize bytes.
func TestArchiveRoundTrip(t *testing.T) {
	src := t.TempDir()
	files := map[string][]byte{
		"meta/journal":                 []byte("journal"),
		"partitions/p1/00000001.seg":   bytes.Repeat([]byte("segment "), 1000),
		"partitions/p1/empty":          nil,
		"streams/q/shard-00000001.bin": []byte{1, 2, 3},
	}
	var plan []archiveFile
	for rel, data := range files {
		path := filepath.Join(src, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
		require.NoError(t, os.WriteFile(path, data, 0o600))
		plan = append(plan, archiveFile{rel: rel, path: path, size: int64(len(data))})
	}
	plan = append(plan, archiveFile{rel: "partitions/p1/gone", path: filepath.Join(src, "gone"), size: 10})
	released := 0
	ar := &archiveReader{files: plan, release: func() { released++ }}
	data, err := io.ReadAll(ar)
	require.NoError(t, err)
	require.NoError(t, ar.Close())
	require.Equal(t, 1, released)
	require.Equal(t, archiveSize(plan), int64(len(data)))

	dst := t.TempDir()
	require.NoError(t, extractArchive(bytes.NewReader(data), dst))
	for rel, want := range files {
		got, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(rel)))
		require.NoError(t, err, rel)
		require.Equal(t, string(want), string(got), rel)
	}
	_, err = os.Stat(filepath.Join(dst, "partitions", "p1", "gone"))
	require.True(t, os.IsNotExist(err))
}

// A hostile archive never panics and never writes outside its directory.
func FuzzExtractArchive(f *testing.F) {
	good := &archiveReader{files: nil}
	data, _ := io.ReadAll(good)
	f.Add(data)
	rec := func(rel string, size uint64, present byte, body string) []byte {
		b := []byte{byte(len(rel) >> 8), byte(len(rel))}
		b = append(b, rel...)
		for i := 7; i >= 0; i-- {
			b = append(b, byte(size>>(8*i)))
		}
		return append(append(b, present), body...)
	}
	f.Add(rec("a/b", 3, 1, "xyz"))
	f.Add(rec("../escape", 1, 1, "x"))
	f.Add(rec("/abs", 1, 1, "x"))
	f.Add(rec("a", 1<<62, 1, "x"))
	f.Add(rec("gone", 2, 0, "\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		dir := filepath.Join(root, "in")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		_ = extractArchive(bytes.NewReader(data), dir)
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 || entries[0].Name() != "in" {
			t.Fatalf("wrote outside its directory: %v", entries)
		}
	})
}
