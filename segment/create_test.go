package segment

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCreate(t *testing.T) {
	cases := []struct {
		name    string
		prepare func(t *testing.T, dir string)
		next    uint64
	}{
		{"new directory: an empty log, nothing on disk until the first append", func(t *testing.T, dir string) {}, 1},
		{"existing log: opened as Open does", func(t *testing.T, dir string) {
			l, _, err := Open(dir, Options{})
			require.NoError(t, err)
			_, err = l.Append(1, recs(0, 3, 10))
			require.NoError(t, err)
			require.NoError(t, l.Close())
		}, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "p")
			tc.prepare(t, dir)
			l, err := Create(dir, Options{})
			require.NoError(t, err)
			assert.Equal(t, tc.next, l.NextOffset())
			if tc.next == 1 {
				names, err := os.ReadDir(dir)
				require.NoError(t, err)
				assert.Empty(t, names)
			}
			first, err := l.Append(2, recs(10, 2, 10))
			require.NoError(t, err)
			assert.Equal(t, tc.next, first)
			require.NoError(t, l.Close())
			l2, _, err := Open(dir, Options{})
			require.NoError(t, err)
			defer l2.Close()
			assert.Equal(t, tc.next+2, l2.NextOffset())
			msgs := readAll(t, l2, tc.next)
			require.Len(t, msgs, 2)
			requireRecord(t, rec(10, 10), msgs[0])
		})
	}
}
