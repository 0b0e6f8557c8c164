package queenimport_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/queenimport"
	"github.com/combmq/comb/queenimport/pgtest"
	"github.com/combmq/comb/report"
	"github.com/combmq/comb/seal"
)

// queenState makes, with Queen's own procedures, the state the tests import: queue imp with
// options, p1 with 10 messages (g1 consumed 4, g2 holds a live lease on 3), p2 with 6
// (queue mode failed the first into the DLQ with "boom").
type queenState struct {
	pg      *pgtest.Cluster
	g2Lease string
	g2Msgs  []pgtest.Message
	failed  pgtest.Message // the p2 message queue mode failed into the DLQ
	traced  pgtest.Message // the p1 message with a trace event (names order-7, bill)
}

func makeQueenState(t *testing.T) *queenState {
	pg := pgtest.Start(t)
	pg.Configure("imp", map[string]any{"leaseTime": 300, "retryLimit": 0, "deadLetterQueue": true, "dlqAfterMaxRetries": true,
		"namespace": "shop", "task": "bill", "delayedProcessing": 0, "maxSize": 1000, "retentionSeconds": 3600})
	var p1, p2 []map[string]any
	for i := range 10 {
		p1 = append(p1, map[string]any{"queue": "imp", "partition": "p1", "transactionId": fmt.Sprintf("a%d", i), "payload": map[string]any{"n": i}})
	}
	for i := range 6 {
		p2 = append(p2, map[string]any{"queue": "imp", "partition": "p2", "transactionId": fmt.Sprintf("b%d", i), "payload": map[string]any{"n": i},
			"traceId": uuid.NewString()})
	}
	pg.Push(p1)
	pg.Push(p2)
	l1 := uuid.NewString()
	m1 := pg.Pop("imp", "p1", "g1", 4, l1)
	require.Len(t, m1, 4)
	pg.Ack(m1, "g1", l1, "completed", "")
	s := &queenState{pg: pg, g2Lease: uuid.NewString()}
	s.g2Msgs = pg.Pop("imp", "p1", "g2", 3, s.g2Lease)
	require.Len(t, s.g2Msgs, 3)
	l3 := uuid.NewString()
	m3 := pg.Pop("imp", "p2", broker.QueueModeGroup, 1, l3)
	require.Len(t, m3, 1)
	pg.Ack(m3, broker.QueueModeGroup, l3, "failed", "boom")
	s.failed = m3[0]
	pg.Call(nil, "record_trace_v1", map[string]any{"transactionId": m1[0].TransactionID, "partitionId": m1[0].PartitionID,
		"consumerGroup": "g1", "eventType": "processing", "data": map[string]any{"step": 1}, "traceNames": []string{"order-7", "bill"},
		"workerId": "w1"})
	s.traced = m1[0]

	// Queue sec: one message stored encrypted, in Queen's form {"encrypted","iv","authTag"}
	// (base64 AES-256-GCM under QUEEN_ENCRYPTION_KEY; the push procedure takes it sealed).
	pg.Configure("sec", map[string]any{"encryptionEnabled": true})
	sealed, err := testKeys.Seal([]byte(`{"secret":42}`))
	require.NoError(t, err)
	form := sealed[6:] // after seal's header: the JSON form Queen stores
	pg.Push([]map[string]any{{"queue": "sec", "transactionId": "s0", "payload": json.RawMessage(form), "is_encrypted": true}})
	return s
}

var testKey, _ = seal.NewKey([]byte("0123456789abcdef0123456789abcdef"))
var testKeys = seal.NewKeyring(testKey)

func openBroker(t *testing.T, dir string) *broker.Broker {
	b, err := broker.Open(broker.Config{DataDir: dir, Keys: testKeys})
	require.NoError(t, err)
	return b
}

func importInto(t *testing.T, s *queenState, dir string) queenimport.Report {
	b := openBroker(t, dir)
	defer b.Close()
	rep, err := queenimport.Import(context.Background(), s.pg.Conn, b, queenimport.Options{Key: testKey})
	require.NoError(t, err)
	require.NoError(t, b.Close())
	return rep
}

func txids(msgs []broker.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.TransactionID
	}
	return out
}

func pop(t *testing.T, b *broker.Broker, partition, group string, batch int, autoAck bool) []broker.Message {
	res, err := b.Pop(context.Background(), broker.PopRequest{Queue: "imp", Partition: partition, Group: group, Batch: batch,
		Partitions: 1, AutoAck: autoAck})
	require.NoError(t, err)
	out := append([]broker.Message(nil), res.Messages...)
	for i := range out {
		out[i].Payload = append([]byte(nil), out[i].Payload...)
	}
	res.Release()
	return out
}

// queenNext is what Queen itself delivers next to group on partition (popped after the
// import, so it does not change what was imported).
func queenNext(s *queenState, partition, group string, batch int) []string {
	msgs := s.pg.Pop("imp", partition, group, batch, uuid.NewString())
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.TransactionID
	}
	return out
}

func TestImportContinuesWhereQueenStood(t *testing.T) {
	s := makeQueenState(t)
	dir := t.TempDir()
	rep := importInto(t, s, dir)
	assert.Equal(t, 2, rep.Queues)
	assert.Equal(t, 4, rep.Partitions, "p1, p2 and the Default partitions configure made")
	assert.Equal(t, int64(17), rep.Messages)
	assert.Equal(t, 1, rep.Leases)
	assert.Equal(t, 1, rep.DeadLetters)

	b := openBroker(t, dir)
	defer b.Close()
	// g1: exactly Queen's next messages, with Queen's ids and partition id.
	got := pop(t, b, "p1", "g1", 10, true)
	want := queenNext(s, "p1", "g1", 10)
	require.Len(t, want, 6)
	assert.Equal(t, want, txids(got))
	var qid, qpid string
	require.NoError(t, s.pg.Conn.QueryRow(context.Background(),
		"SELECT m.id::text, m.partition_id::text FROM queen.messages m WHERE m.transaction_id = $1", got[0].TransactionID).Scan(&qid, &qpid))
	assert.Equal(t, qid, got[0].ID)
	assert.Equal(t, qpid, got[0].PartitionID)

	// g2's lease taken on Queen: held on comb (no pop gets its span), and its ack succeeds.
	assert.Empty(t, pop(t, b, "p1", "g2", 10, false), "g2's span is leased")
	acks := make([]broker.AckItem, len(s.g2Msgs))
	for i, m := range s.g2Msgs {
		acks[i] = broker.AckItem{TransactionID: m.TransactionID, PartitionID: m.PartitionID, LeaseID: s.g2Lease, Status: "completed"}
	}
	res, err := b.Ack("g2", acks)
	require.NoError(t, err)
	for _, r := range res {
		assert.True(t, r.Success, "ack of %s: %s", r.TransactionID, r.Error)
	}
	// Queen after the same ack: g2's next is the same message.
	s.pg.Ack(s.g2Msgs, "g2", s.g2Lease, "completed", "")
	assert.Equal(t, queenNext(s, "p1", "g2", 1), txids(pop(t, b, "p1", "g2", 1, true)))

	// Queue mode on p2: the failed b0 is behind the cursor, the rest is next.
	assert.Equal(t, queenNext(s, "p2", broker.QueueModeGroup, 10), txids(pop(t, b, "p2", "", 10, true)))

	// A fresh group reads the whole of p2, the dead-lettered message included.
	fresh := txids(pop(t, b, "p2", "fresh", 100, true))
	assert.ElementsMatch(t, []string{"b0", "b1", "b2", "b3", "b4", "b5"}, fresh)

	// Dedup: a Queen transactionId is a duplicate.
	pr, err := b.Push([]broker.PushItem{{Queue: "imp", Partition: "p1", TransactionID: "a7", Payload: []byte(`{"again":true}`)}})
	require.NoError(t, err)
	assert.Equal(t, broker.PushDuplicate, pr[0].Status)

	// The dead letter with its error text, group and Queen's message id.
	n, err := b.DLQCount("imp")
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	dl, total, err := report.New(b.View()).DLQ(report.DLQFilter{Queue: "imp", Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, total)
	assert.Equal(t, "boom", dl[0].ErrorMessage)
	assert.Equal(t, s.failed.TransactionID, dl[0].TransactionID)
	assert.Equal(t, s.failed.ID, dl[0].ID)
	assert.Equal(t, broker.QueueModeGroup, dl[0].Group)

	// The trace event with its names, group, worker, data and Queen's id.
	assert.Equal(t, 1, rep.Traces)
	evs, err := b.Traces(s.traced.PartitionID, s.traced.TransactionID)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	var traceID string
	require.NoError(t, s.pg.Conn.QueryRow(context.Background(), "SELECT id::text FROM queen.message_traces").Scan(&traceID))
	assert.Equal(t, traceID, evs[0].ID)
	assert.Equal(t, []string{"bill", "order-7"}, evs[0].Names)
	assert.Equal(t, "g1", evs[0].Group)
	assert.Equal(t, "processing", evs[0].EventType)
	assert.Equal(t, "w1", evs[0].WorkerID)
	assert.JSONEq(t, `{"step":1}`, string(evs[0].Data))

	// The encrypted message is carried sealed and opens with Queen's key.
	res2, err := b.Pop(context.Background(), broker.PopRequest{Queue: "sec", Batch: 10, Partitions: 1, AutoAck: true})
	require.NoError(t, err)
	require.Len(t, res2.Messages, 1)
	assert.Equal(t, "", res2.Messages[0].PayloadError)
	assert.JSONEq(t, `{"secret":42}`, string(res2.Messages[0].Payload))
	res2.Release()

	// Importing again after comb served (cursors moved, a duplicate refused) adds nothing.
	require.NoError(t, b.Close())
	rep = importInto(t, s, dir)
	assert.Equal(t, int64(0), rep.Messages)
	assert.Equal(t, 0, rep.DeadLetters)
	assert.Equal(t, 0, rep.Traces)
	b = openBroker(t, dir)
	defer b.Close()
	assert.ElementsMatch(t, []string{"b0", "b1", "b2", "b3", "b4", "b5"}, txids(pop(t, b, "p2", "fresh2", 100, true)))
	assert.Empty(t, pop(t, b, "p1", "g1", 10, true), "g1 read p1 to its end on comb: the import did not move it back")
}

func TestImportTwiceAddsNothingAndVerifies(t *testing.T) {
	s := makeQueenState(t)
	dir := t.TempDir()
	importInto(t, s, dir)
	rep := importInto(t, s, dir)
	assert.Equal(t, int64(0), rep.Messages)
	assert.Equal(t, int64(17), rep.MessagesSkipped)
	assert.Equal(t, 0, rep.DeadLetters)

	b := openBroker(t, dir)
	diffs, err := queenimport.Verify(context.Background(), s.pg.Conn, b, testKey)
	require.NoError(t, err)
	assert.Empty(t, diffs)

	// Tamper with comb's side: g1 reads on, one more message is pushed.
	pop(t, b, "p1", "g1", 1, true)
	_, err = b.Push([]broker.PushItem{{Queue: "imp", Partition: "p2", TransactionID: "extra", Payload: []byte(`1`)}})
	require.NoError(t, err)
	diffs, err = queenimport.Verify(context.Background(), s.pg.Conn, b, testKey)
	require.NoError(t, err)
	var what []string
	for _, d := range diffs {
		what = append(what, d.Partition+"/"+d.Group+"/"+d.What)
	}
	assert.ElementsMatch(t, []string{"p1/g1/cursor", "p2//message count", "p2//last message id", "p2//checksum of ids and payloads"}, what,
		strings.Join(what, "; "))
	require.NoError(t, b.Close())

	// A lease that expired before the import is not carried: its span is free again.
	b = openBroker(t, t.TempDir())
	defer b.Close()
	later := func() time.Time { return time.Now().Add(time.Hour) }
	rep, err = queenimport.Import(context.Background(), s.pg.Conn, b, queenimport.Options{Key: testKey, Now: later})
	require.NoError(t, err)
	assert.Equal(t, 0, rep.Leases)
	assert.Equal(t, 1, rep.LeasesExpired)

	// --state: where each partition stands is saved after its pages; a run with the state
	// reads nothing it already copied, and a state is refused for another data directory.
	dir2 := t.TempDir()
	path := dir2 + "/import.state"
	st, err := queenimport.LoadState(path, dir2+"/data")
	require.NoError(t, err)
	b2 := openBroker(t, dir2+"/data")
	rep, err = queenimport.Import(context.Background(), s.pg.Conn, b2, queenimport.Options{Key: testKey, State: st})
	require.NoError(t, err)
	assert.Equal(t, int64(17), rep.Messages)
	require.NoError(t, b2.Close())
	st, err = queenimport.LoadState(path, dir2+"/data")
	require.NoError(t, err)
	assert.Len(t, st.Partitions, 3, "p1, p2 and sec's Default hold messages")
	b2 = openBroker(t, dir2+"/data")
	defer b2.Close()
	rep, err = queenimport.Import(context.Background(), s.pg.Conn, b2, queenimport.Options{Key: testKey, State: st})
	require.NoError(t, err)
	assert.Equal(t, int64(0), rep.Messages+rep.MessagesSkipped, "nothing read again")
	_, err = queenimport.LoadState(path, dir)
	assert.ErrorContains(t, err, "is for data directory")
}

// Retention on Queen deleted the message a cursor names: the cursor comes over at the newest
// message before it, so the next pop is still Queen's next.
func TestImportCursorOfADeletedMessage(t *testing.T) {
	pg := pgtest.Start(t)
	pg.Push([]map[string]any{{"queue": "ret", "transactionId": "r0", "payload": 0}, {"queue": "ret", "transactionId": "r1", "payload": 1},
		{"queue": "ret", "transactionId": "r2", "payload": 2}, {"queue": "ret", "transactionId": "r3", "payload": 3}})
	l := uuid.NewString()
	m := pg.Pop("ret", "Default", "g", 2, l)
	require.Len(t, m, 2)
	pg.Ack(m, "g", l, "completed", "")
	pg.Exec("DELETE FROM queen.messages WHERE id = $1::uuid", m[1].ID)
	b := openBroker(t, t.TempDir())
	defer b.Close()
	_, err := queenimport.Import(context.Background(), pg.Conn, b, queenimport.Options{})
	require.NoError(t, err)
	diffs, err := queenimport.Verify(context.Background(), pg.Conn, b, nil)
	require.NoError(t, err)
	assert.Empty(t, diffs)
	res, err := b.Pop(context.Background(), broker.PopRequest{Queue: "ret", Partition: "Default", Group: "g", Batch: 10, Partitions: 1, AutoAck: true})
	require.NoError(t, err)
	want := make([]string, 0, 2)
	for _, x := range pg.Pop("ret", "Default", "g", 10, uuid.NewString()) {
		want = append(want, x.TransactionID)
	}
	assert.Len(t, want, 2)
	assert.Equal(t, want, txids(res.Messages))
	res.Release()
}
