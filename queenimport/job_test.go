package queenimport_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/queenimport"
	"github.com/combmq/comb/queenimport/pgtest"
)

func waitJob(t *testing.T, j *queenimport.Jobs, ok func(queenimport.JobStatus) bool) queenimport.JobStatus {
	deadline := time.Now().Add(60 * time.Second)
	for {
		st := j.Status()
		if ok(st) {
			return st
		}
		require.True(t, time.Now().Before(deadline), "job never got there: %+v", st)
		time.Sleep(20 * time.Millisecond)
	}
}

// The dashboard's migration (no following): start, status until complete, validate, reset;
// a bad database is an "error" status with the reason.
func TestJobsImportValidateReset(t *testing.T) {
	s := makeQueenState(t)
	b := openBroker(t, t.TempDir())
	defer b.Close()
	j := queenimport.NewJobs(b, testKey)
	assert.Equal(t, "idle", j.Status().Status)

	st, err := j.Start(queenimport.JobRequest{URL: s.pg.URL})
	require.NoError(t, err)
	assert.Equal(t, "dumping", st.Status)
	st = waitJob(t, j, func(s queenimport.JobStatus) bool { return s.Status == "complete" || s.Status == "error" })
	require.Equal(t, "complete", st.Status, st.Error)
	assert.Equal(t, "done", st.Phase)
	assert.Equal(t, int64(17), st.Imported.Messages)
	assert.Equal(t, 1, st.Imported.Leases)
	assert.Equal(t, 1, st.Imported.DeadLetters)
	assert.Equal(t, 1, st.Imported.Traces)
	assert.Contains(t, st.RestoreOutput, "queue imp partition p1: 10 messages (10 new)")
	_, err = j.Cutover()
	assert.ErrorIs(t, err, queenimport.ErrNoJob)

	v, err := j.Validate(context.Background(), s.pg.URL)
	require.NoError(t, err)
	assert.True(t, v.AllMatch, "%+v", v)
	assert.Empty(t, v.Differences)
	want := []queenimport.TableCount{{Table: "queues", SourceCount: 2, TargetCount: 2, Match: true},
		{Table: "partitions", SourceCount: 4, TargetCount: 4, Match: true}, {Table: "messages", SourceCount: 17, TargetCount: 17, Match: true},
		{Table: "partition_consumers", SourceCount: 3, TargetCount: 3, Match: true}, {Table: "dead_letter_queue", SourceCount: 1, TargetCount: 1, Match: true}}
	assert.Equal(t, want, v.Tables)

	require.NoError(t, j.Reset())
	assert.Equal(t, "idle", j.Status().Status)
	_, err = j.Start(queenimport.JobRequest{URL: s.pg.URL + "&dbname=nosuchdb"})
	require.NoError(t, err)
	st = waitJob(t, j, func(s queenimport.JobStatus) bool { return s.Status == "error" })
	assert.Equal(t, "failed", st.Phase)
	assert.Contains(t, st.Error, "nosuchdb")

	v, err = j.Validate(context.Background(), s.pg.URL)
	require.NoError(t, err)
	assert.True(t, v.AllMatch, "the failed start changed nothing")
}

// The progress line counts copied messages against PostgreSQL's estimate of the table.
func TestImportProgressLine(t *testing.T) {
	s := makeQueenState(t)
	s.pg.Exec("ANALYZE queen.messages")
	b := openBroker(t, t.TempDir())
	defer b.Close()
	var out strings.Builder
	_, err := queenimport.Import(context.Background(), s.pg.Conn, b, queenimport.Options{Key: testKey, Progress: &out, ProgressEvery: time.Nanosecond})
	require.NoError(t, err)
	assert.Contains(t, out.String(), "progress: 17 of ~17 messages (100%), ")
	assert.Contains(t, out.String(), "queue imp partition p1: 10 messages (10 new)\n")
}

// Queen's streams: a query registered and a window-flush cycle's state, both made with Queen's
// procedures, come over; the query keeps its name and config hash, the state its keys and
// values on the same partition; a second import leaves the same state.
func TestImportStreamsQueriesAndState(t *testing.T) {
	pg := pgtest.Start(t)
	pg.Push(items("orders", "cust-1", "o", 0, 2))
	var reg []struct {
		Result struct {
			QueryID string `json:"query_id"`
		} `json:"result"`
	}
	pg.Call(&reg, "streams_register_query_v1", []map[string]any{{"idx": 0, "name": "orders.per_min", "source_queue": "orders",
		"sink_queue": "orders.totals", "config_hash": "abc123"}})
	require.Len(t, reg, 1)
	var pid string
	require.NoError(t, pg.Conn.QueryRow(context.Background(), "SELECT p.id::text FROM queen.partitions p WHERE p.name = 'cust-1'").Scan(&pid))
	pg.Call(nil, "streams_cycle_v1", []map[string]any{{"idx": 0, "query_id": reg[0].Result.QueryID, "partition_id": pid,
		"state_ops": []map[string]any{{"type": "upsert", "key": "w:1", "value": map[string]any{"sum": 5}},
			{"type": "upsert", "key": "w:2", "value": map[string]any{"sum": 7}}}}})

	b := openBroker(t, t.TempDir())
	defer b.Close()
	for run := range 2 {
		rep, err := queenimport.Import(context.Background(), pg.Conn, b, queenimport.Options{})
		require.NoError(t, err)
		assert.Equal(t, 1, rep.StreamQueries, "run %d", run)
		assert.Equal(t, 2, rep.StreamState, "run %d", run)
		assert.Equal(t, 0, rep.StreamStateSkipped)
	}
	qs := b.StreamQueries()
	require.Len(t, qs, 1)
	assert.Equal(t, "orders.per_min", qs[0].Name)
	assert.Equal(t, "orders", qs[0].SourceQueue)
	assert.Equal(t, "orders.totals", qs[0].SinkQueue)
	assert.Equal(t, "abc123", qs[0].ConfigHash)
	rows, err := b.StreamState(broker.StreamStateRequest{QueryID: qs[0].QueryID, PartitionID: pid})
	require.NoError(t, err)
	require.Len(t, rows, 2)
	assert.Equal(t, "w:1", rows[0].Key)
	assert.JSONEq(t, `{"sum":5}`, string(rows[0].Value))
	assert.Equal(t, "w:2", rows[1].Key)
	assert.JSONEq(t, `{"sum":7}`, string(rows[1].Value))
}
