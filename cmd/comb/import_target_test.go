package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/httpapi"
	"github.com/combmq/comb/queenimport"
	"github.com/combmq/comb/queenimport/pgtest"
	"github.com/combmq/comb/report"
)

// serveForImport runs a comb server (its broker and HTTP API, with the import runner) on a
// loopback port and returns its URL.
func serveForImport(t *testing.T) (string, *broker.Broker) {
	b, err := broker.Open(broker.Config{DataDir: t.TempDir()})
	require.NoError(t, err)
	jobs := queenimport.NewJobs(b, nil)
	srv := httpapi.New(b, report.New(b.View()), httpapi.Config{Migration: jobs})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		jobs.Close()
		_ = srv.Shutdown(context.Background())
		_ = b.Close()
	})
	return "http://" + ln.Addr().String(), b
}

func getJSON(t *testing.T, url string, out any) int {
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	if out != nil && res.StatusCode == 200 {
		require.NoError(t, json.Unmarshal(raw, out), string(raw))
	}
	return res.StatusCode
}

// waitStatus polls the server's migration status until ok says so (a deadline, not a sleep
// for synchronisation: the passes run on their own schedule).
func waitStatus(t *testing.T, base string, ok func(queenimport.JobStatus) bool) queenimport.JobStatus {
	deadline := time.Now().Add(60 * time.Second)
	for {
		var st queenimport.JobStatus
		require.Equal(t, 200, getJSON(t, base+"/api/v1/migration/status", &st))
		if ok(st) {
			return st
		}
		require.True(t, time.Now().Before(deadline), "status never got there: %+v", st)
		time.Sleep(50 * time.Millisecond)
	}
}

func popComb(t *testing.T, base, queue, partition, group string) []string {
	var body struct {
		Messages []struct {
			TransactionID string `json:"transactionId"`
		} `json:"messages"`
	}
	code := getJSON(t, fmt.Sprintf("%s/api/v1/pop/queue/%s/partition/%s?consumerGroup=%s&batch=100&autoAck=true&wait=false", base, queue, partition, group), &body)
	require.Contains(t, []int{200, 204}, code)
	out := []string{}
	for _, m := range body.Messages {
		out = append(out, m.TransactionID)
	}
	return out
}

// Issue 24, a live move through `comb import --target`: the snapshot import and the passes run
// inside the server; what producers push to Queen meanwhile arrives on comb once; the cutover,
// after Queen's consumers stopped, brings their cursors and leases; --verify compares; --stop
// ends the following.
func TestImportTargetFollowCutoverStop(t *testing.T) {
	pg := pgtest.Start(t)
	pg.Push(itemsFor("live", "p1", "a", 0, 10))
	base, b := serveForImport(t)

	code, stdout, stderr := runComb(t, "import", "--from-queen", pg.URL, "--target", base, "--follow", "--interval", "20ms", "--quiet")
	require.Equal(t, importOK, code, stdout+stderr)
	assert.Contains(t, stdout, "10 messages (0 already there)")
	assert.Contains(t, stdout, "following:")

	pg.Push(itemsFor("live", "p1", "a", 10, 5))
	pg.Push(itemsFor("live", "p2", "b", 0, 3))
	st := waitStatus(t, base, func(s queenimport.JobStatus) bool { return s.FollowMessages >= 8 })
	assert.Equal(t, int64(8), st.FollowMessages)
	assert.True(t, st.FollowBoundExact)

	// Queen's consumers: g1 reads 12 of p1 and holds a lease on 2 more, then stops.
	l1 := uuid.NewString()
	m1 := pg.Pop("live", "p1", "g1", 12, l1)
	require.Len(t, m1, 12)
	pg.Ack(m1, "g1", l1, "completed", "")
	l2 := uuid.NewString()
	m2 := pg.Pop("live", "p1", "g1", 2, l2)
	require.Len(t, m2, 2)

	code, stdout, stderr = runComb(t, "import", "--target", base, "--cutover", "--quiet")
	require.Equal(t, importOK, code, stdout+stderr)
	assert.Contains(t, stdout, "cutover done")
	assert.Contains(t, stdout, "1 live leases")
	code, stdout, stderr = runComb(t, "import", "--from-queen", pg.URL, "--target", base, "--verify")
	require.Equal(t, importOK, code, stdout+stderr)

	// The lease taken on Queen acks on comb; then g1's next is the one message after it, as
	// on Queen; a fresh group reads every message once.
	acks := make([]map[string]any, len(m2))
	for i, m := range m2 {
		acks[i] = map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": l2, "status": "completed"}
	}
	body, _ := json.Marshal(map[string]any{"consumerGroup": "g1", "acknowledgments": acks})
	res, err := http.Post(base+"/api/v1/ack/batch", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode, string(raw))
	var results []struct {
		Success bool `json:"success"`
	}
	require.NoError(t, json.Unmarshal(raw, &results))
	require.Len(t, results, 2)
	assert.True(t, results[0].Success && results[1].Success, string(raw))
	pg.Ack(m2, "g1", l2, "completed", "")
	var want []string
	for _, m := range pg.Pop("live", "p1", "g1", 100, uuid.NewString()) {
		want = append(want, m.TransactionID)
	}
	require.Len(t, want, 1)
	assert.Equal(t, want, popComb(t, base, "live", "p1", "g1"))
	assert.Len(t, popComb(t, base, "live", "p1", "fresh"), 15)

	// Producers still on Queen after the cutover: copied once, then --stop.
	pg.Push(itemsFor("live", "p2", "b", 3, 2))
	waitStatus(t, base, func(s queenimport.JobStatus) bool { return s.FollowMessages >= 10 })
	code, stdout, stderr = runComb(t, "import", "--target", base, "--stop")
	require.Equal(t, importOK, code, stdout+stderr)
	assert.Contains(t, stdout, "complete (done")
	n := 0
	require.NoError(t, b.ScanPartition("live", "p2", func(uint64, [16]byte, string, []byte, int64) error { n++; return nil }))
	assert.Equal(t, 5, n)

	// The flags that need a running server say so.
	code, _, stderr = runComb(t, "import", "--from-queen", pg.URL, "--data-dir", t.TempDir(), "--follow")
	assert.Equal(t, importUsage, code)
	assert.Contains(t, stderr, "need --target")
}

func itemsFor(queue, partition, prefix string, from, n int) []map[string]any {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{"queue": queue, "partition": partition, "transactionId": fmt.Sprintf("%s%d", prefix, from+i), "payload": from + i}
	}
	return out
}
