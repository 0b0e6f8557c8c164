package replay

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/datadir/datadirtest"
	"github.com/combmq/comb/dump"
)

// Issue 14: records only the commit log holds were acknowledged: comb replay
// --data-dir pushes them too, after the partition file's durable records and in
// order, and never the unsynced bytes past the durable end; so does a replay from a
// dump of the same directory.
func TestReplayIncludesTheCommitLog(t *testing.T) {
	for _, source := range []string{"data-dir", "dump-file"} {
		t.Run(source, func(t *testing.T) {
			m, root := datadirtest.KilledWithGarbage(t)
			target := newFakeTarget()
			srv := httptest.NewServer(target)
			defer srv.Close()
			opts := Options{Target: srv.URL, Batch: 4}
			if source == "data-dir" {
				opts.DataDir = root
			} else {
				var dumped bytes.Buffer
				_, err := dump.Run(root, dump.Options{Records: true, Payload: true}, &dumped)
				require.NoError(t, err)
				opts.DumpFile = filepath.Join(t.TempDir(), "dump.jsonl")
				require.NoError(t, os.WriteFile(opts.DumpFile, dumped.Bytes(), 0o644))
			}
			st, err := Run(context.Background(), opts)
			require.NoError(t, err)
			assert.Equal(t, int64(49), st.Pushed)
			assert.Equal(t, m.Pushed["p0"], target.order["orders/p0"])
			assert.Equal(t, m.Pushed["p1"], target.order["orders/p1"])
		})
	}
}
