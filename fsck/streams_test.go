package fsck

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/dump"
	"github.com/combmq/comb/streams"
)

// streamsDir is a data directory with one stream query and one shard of two
// rows, flushed to its snapshot by a clean close.
func streamsDir(t *testing.T) (root, qid, pid string) {
	t.Helper()
	root = t.TempDir()
	b, err := broker.Open(broker.Config{DataDir: root, Sync: "never", Logger: zerolog.Nop()})
	require.NoError(t, err)
	_, err = b.Push([]broker.PushItem{{Queue: "src", Partition: "p", TransactionID: "m1", Payload: []byte("1")}})
	require.NoError(t, err)
	q, err := b.StreamRegister(broker.StreamQueryRequest{Name: "wc", SourceQueue: "src", ConfigHash: "h"})
	require.NoError(t, err)
	res, err := b.Pop(context.Background(), broker.PopRequest{Queue: "src", Group: "g", Batch: 1, Partitions: 1})
	require.NoError(t, err)
	res.Release()
	r, err := b.StreamCycle(broker.StreamCycleRequest{QueryID: q.QueryID, PartitionID: res.PartitionID,
		StateOps: []broker.StreamStateOp{{Type: "upsert", Key: "a", Value: []byte(`{"n":1}`)}, {Type: "upsert", Key: "b", Value: []byte(`2`)}}})
	require.NoError(t, err)
	require.True(t, r.Success, r.Error)
	require.NoError(t, b.Close())
	return root, q.QueryID, res.PartitionID
}

func TestFsckChecksStreamsFiles(t *testing.T) {
	root, qid, pid := streamsDir(t)
	rep, err := Run(root, Options{Mode: ModeCheck})
	require.NoError(t, err)
	assert.Empty(t, rep.Findings)
	assert.Equal(t, 1, rep.Totals.StreamQueries)
	assert.Equal(t, 1, rep.Totals.StreamShards)

	var out bytes.Buffer
	st, err := dump.Run(root, dump.Options{StreamQuery: "wc"}, &out)
	require.NoError(t, err)
	assert.Equal(t, int64(2), st.Records)
	assert.Contains(t, out.String(), `"type":"stream_query","queryId":"`+qid+`","name":"wc"`)
	assert.Contains(t, out.String(), `"type":"stream_row","partitionId":"`+pid+`","key":"a","value":{"n":1}`)

	path := filepath.Join(root, streams.Dir, qid, pid)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[len(b)-1] ^= 1
	require.NoError(t, os.WriteFile(path, b, 0o644))
	rep, err = Run(root, Options{Mode: ModeCheck})
	require.NoError(t, err)
	require.Equal(t, []Kind{KindStreamsCorrupt}, kinds(rep))
	assert.Equal(t, filepath.Join(streams.Dir, qid, pid), rep.Findings[0].File)
	assert.Equal(t, SeverityDamaged, rep.Findings[0].Severity)
}

func TestFsckReportsStaleShards(t *testing.T) {
	root, qid, _ := streamsDir(t)
	stray := filepath.Join(root, streams.Dir, qid, "0198e4c1-0000-7000-8000-00000000aa01")
	s := streams.Snapshot{Partition: [16]byte{0x01, 0x98, 0xe4, 0xc1, 0, 0, 0x70, 0, 0x80, 0, 0, 0, 0, 0, 0xaa, 0x01}, LSN: 1}
	s.Query = uuid.MustParse(qid)
	b, err := streams.SnapshotFormat.Append(nil, streams.EncodeSnapshot(&s))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(stray, b, 0o644))
	rep, err := Run(root, Options{Mode: ModeCheck})
	require.NoError(t, err)
	require.Equal(t, []Kind{KindStreamsStale}, kinds(rep))
	assert.Contains(t, rep.Findings[0].Detail, "not in the metadata")

	b2, err := broker.Open(broker.Config{DataDir: root, Sync: "never", Logger: zerolog.Nop(), FlushInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, b2.Close())
	_, err = os.Stat(stray)
	assert.True(t, os.IsNotExist(err), "the server removed it")
}
