package segment

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStampChangesWithTheFiles(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, dir string)
		same   bool
	}{
		{"untouched directory keeps its stamp", func(t *testing.T, dir string) {}, true},
		{"append to the newest file", func(t *testing.T, dir string) {
			f, err := os.OpenFile(filepath.Join(dir, segName(1)), os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.Write([]byte("x"))
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}, false},
		{"a file created in the directory", func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "other"), nil, 0o644))
		}, false},
		{"directory replaced by a copy", func(t *testing.T, dir string) {
			cp := dir + ".copy"
			require.NoError(t, os.CopyFS(cp, os.DirFS(dir)))
			require.NoError(t, os.RemoveAll(dir))
			require.NoError(t, os.Rename(cp, dir))
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			l, _, err := Open(dir, Options{})
			require.NoError(t, err)
			_, err = l.Append(1, recs(0, 2, 10))
			require.NoError(t, err)
			require.NoError(t, l.Close())
			s := l.Summary()
			require.Equal(t, uint64(1), s.ActiveBase)
			s.Stamp, err = Stamp(dir, s)
			require.NoError(t, err)
			assert.True(t, SummaryMatches(dir, s))
			tc.change(t, dir)
			assert.Equal(t, tc.same, SummaryMatches(dir, s))
		})
	}
}

func TestSummaryWithoutStampIsNeverTrusted(t *testing.T) {
	dir := t.TempDir()
	assert.False(t, SummaryMatches(dir, Summary{NextOffset: 1}))
	s := Summary{NextOffset: 5, ActiveBase: 1, Stamp: 7}
	assert.False(t, SummaryMatches(dir, s), "a missing newest file never matches")
}
