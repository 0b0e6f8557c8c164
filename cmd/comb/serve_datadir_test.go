package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// serve refuses a cluster node's directory without the cluster flags and a single node's data
// joining a cluster, warns when one bootstraps on it (serve_datadir.go), and takes every
// directory it made itself.
func TestCheckDataDirRole(t *testing.T) {
	cases := []struct {
		name      string
		entries   []string // directories to make under the data directory
		clustered bool
		joining   bool
		refused   string // "" = accepted
		warned    string // "" = no warning
	}{
		{name: "an empty directory, single", clustered: false},
		{name: "an empty directory, cluster", clustered: true},
		{name: "a single node's restart", entries: []string{"meta", "partitions", "cursor"}, clustered: false},
		{name: "a cluster node's restart", entries: []string{"raft/wal", "meta", "partitions"}, clustered: true},
		{name: "a cluster start that failed before raft's log (lock only)", entries: []string{"raft"}, clustered: true},
		{name: "a mount point's lost+found", entries: []string{"lost+found"}, clustered: true},
		{name: "a cluster node's directory without the flags", entries: []string{"raft/wal", "meta"}, clustered: false,
			refused: "holds a cluster node's raft state"},
		{name: "a single node's data joining a cluster", entries: []string{"meta", "partitions"}, clustered: true, joining: true,
			refused: "holds a single node's data (meta) and no raft state"},
		{name: "a single node's data bootstrapping (a cluster rebuilt from copies): a warning", entries: []string{"meta"}, clustered: true,
			warned: "right only if every member starts from a copy of the same directory"},
		{name: "an empty directory joining", clustered: true, joining: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, e := range c.entries {
				require.NoError(t, os.MkdirAll(filepath.Join(dir, e), 0o700))
			}
			warn, err := checkDataDirRole(dir, c.clustered, c.joining)
			if c.refused == "" {
				require.NoError(t, err)
				if c.warned == "" {
					require.Empty(t, warn)
				} else {
					require.Contains(t, warn, c.warned)
				}
				return
			}
			require.ErrorIs(t, err, errDataDirRole)
			require.Contains(t, err.Error(), c.refused)
		})
	}
}
