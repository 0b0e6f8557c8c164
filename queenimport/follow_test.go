package queenimport_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/queenimport"
	"github.com/combmq/comb/queenimport/pgtest"
)

func items(queue, partition, prefix string, from, n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"queue": queue, "partition": partition, "transactionId": fmt.Sprintf("%s%d", prefix, from+i), "payload": from + i}
	}
	return out
}

func connect(t *testing.T, url string) *pgx.Conn {
	c, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func scanTxids(t *testing.T, b *broker.Broker, queue, partition string) []string {
	var out []string
	require.NoError(t, b.ScanPartition(queue, partition, func(_ uint64, _ [16]byte, txid string, _ []byte, _ int64) error {
		out = append(out, txid)
		return nil
	}))
	return out
}

// queenOrder is the partition's transactionIds in Queen's (created_at, id) order.
func queenOrder(t *testing.T, pg *pgtest.Cluster, queue, partition string) []string {
	rows, err := pg.Conn.Query(context.Background(), `SELECT m.transaction_id FROM queen.messages m
		JOIN queen.partitions p ON p.id = m.partition_id JOIN queen.queues q ON q.id = p.queue_id
		WHERE q.name = $1 AND p.name = $2 ORDER BY m.created_at, m.id`, queue, partition)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return out
}

// A live move: after the snapshot import, passes copy what reaches Queen (new messages, a new
// partition, a new queue), each exactly once; a push transaction still open holds the bound
// back, so its messages arrive in Queen's order once it commits; the cutover brings the
// cursors and leases Queen's consumers left.
func TestFollowCopiesWhatReachesQueenOnceAndCutsOver(t *testing.T) {
	pg := pgtest.Start(t)
	pg.Configure("live", map[string]any{"leaseTime": 300})
	pg.Push(items("live", "p1", "a", 0, 5))
	b := openBroker(t, t.TempDir())
	defer b.Close()
	ctx := context.Background()
	f := queenimport.NewFollower(connect(t, pg.URL), b, nil, queenimport.FollowOptions{})
	require.NoError(t, f.Start(ctx))
	rep, err := queenimport.Import(ctx, connect(t, pg.URL), b, queenimport.Options{State: f.State()})
	require.NoError(t, err)
	assert.Equal(t, int64(5), rep.Messages)

	// The first pass re-reads the overlap below the snapshot's bound: nothing is new.
	n, err := f.Pass(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(0), n)
	_, exact := f.Bound()
	assert.True(t, exact, "a superuser sees every session: the bound is Queen's oldest open transaction")

	pg.Push(items("live", "p1", "a", 5, 5))
	pg.Push(items("live", "p2", "b", 0, 3))
	pg.Push(items("live2", "Default", "c", 0, 2))
	n, err = f.Pass(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(10), n)
	assert.Equal(t, queenOrder(t, pg, "live", "p1"), scanTxids(t, b, "live", "p1"))
	assert.Equal(t, queenOrder(t, pg, "live", "p2"), scanTxids(t, b, "live", "p2"))
	assert.Equal(t, queenOrder(t, pg, "live2", "Default"), scanTxids(t, b, "live2", "Default"))
	n, err = f.Pass(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(0), n, "a pass over the same window adds nothing")

	// The boundary: a push transaction opens (created_at = its start) and stays open while
	// a later push commits. The pass stops before the open one's start, so the later message
	// waits; once it commits, both arrive, in Queen's order.
	late := connect(t, pg.URL)
	tx, err := late.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT queen.push_messages_v2($1::jsonb)", `[{"queue":"live","partition":"p1","transactionId":"late","payload":1}]`)
	require.NoError(t, err)
	pg.Push(items("live", "p1", "after", 0, 1))
	n, err = f.Pass(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(0), n, "the bound is the open transaction's start")
	require.NoError(t, tx.Commit(ctx))
	n, err = f.Pass(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
	want := queenOrder(t, pg, "live", "p1")
	assert.Equal(t, want, scanTxids(t, b, "live", "p1"), "comb holds Queen's order")
	assert.Equal(t, []string{"late", "after0"}, want[len(want)-2:])

	// Queen's consumers read on, one holds a lease, then stop: the cutover carries it all.
	l1 := uuid.NewString()
	m1 := pg.Pop("live", "p1", "g1", 7, l1)
	require.Len(t, m1, 7)
	pg.Ack(m1, "g1", l1, "completed", "")
	l2 := uuid.NewString()
	m2 := pg.Pop("live", "p1", "g1", 2, l2)
	require.Len(t, m2, 2)
	pg.Push(items("live", "p2", "b", 3, 2)) // producers still on Queen
	crep, err := f.Cutover(ctx, queenimport.Options{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), crep.Messages)
	assert.Equal(t, 1, crep.Leases)

	diffs, err := queenimport.Verify(ctx, pg.Conn, b, nil)
	require.NoError(t, err)
	assert.Empty(t, diffs)
	// g1's lease taken on Queen acks on comb; its next message is Queen's next.
	acks := make([]broker.AckItem, len(m2))
	for i, m := range m2 {
		acks[i] = broker.AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: l2, Status: "completed"}
	}
	res, err := b.Ack("g1", acks)
	require.NoError(t, err)
	for _, r := range res {
		assert.True(t, r.Success, "ack of %s: %s", r.TransactionID, r.Error)
	}
	pg.Ack(m2, "g1", l2, "completed", "")
	got, err := b.Pop(ctx, broker.PopRequest{Queue: "live", Partition: "p1", Group: "g1", Batch: 100, Partitions: 1, AutoAck: true})
	require.NoError(t, err)
	var gotTx []string
	for _, m := range got.Messages {
		gotTx = append(gotTx, m.TransactionID)
	}
	got.Release()
	var wantTx []string
	for _, m := range pg.Pop("live", "p1", "g1", 100, uuid.NewString()) {
		wantTx = append(wantTx, m.TransactionID)
	}
	require.Len(t, wantTx, 3)
	assert.Equal(t, wantTx, gotTx)

	// A pass after the cutover still copies what producers push to Queen, once.
	pg.Push(items("live", "p2", "b", 5, 1))
	n, err = f.Pass(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	assert.Equal(t, queenOrder(t, pg, "live", "p2"), scanTxids(t, b, "live", "p2"))
}

// A role that cannot see other roles' sessions falls back to the clock minus the overlap.
func TestFollowBoundFallsBackToTheClock(t *testing.T) {
	pg := pgtest.Start(t)
	pg.Exec("CREATE ROLE reader LOGIN")
	pg.Exec("GRANT USAGE ON SCHEMA queen TO reader")
	pg.Exec("GRANT SELECT ON ALL TABLES IN SCHEMA queen TO reader")
	u, err := pgx.ParseConfig(pg.URL)
	require.NoError(t, err)
	u.User = "reader"
	rc, err := pgx.ConnectConfig(context.Background(), u)
	require.NoError(t, err)
	defer rc.Close(context.Background())
	b := openBroker(t, t.TempDir())
	defer b.Close()
	f := queenimport.NewFollower(rc, b, nil, queenimport.FollowOptions{Overlap: 1})
	require.NoError(t, f.Start(context.Background()))
	pg.Push(items("q", "Default", "a", 0, 3)) // after the snapshot's bound: the pass's to copy
	n, err := f.Pass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, int64(3), n)
	_, exact := f.Bound()
	assert.False(t, exact, "the test's own superuser session is hidden from reader")
	assert.Equal(t, queenOrder(t, pg, "q", "Default"), scanTxids(t, b, "q", "Default"))
}
