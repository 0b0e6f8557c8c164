package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/datadir/datadirtest"
	"github.com/combmq/comb/dump"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/meta"
)

// fakeTarget is a Queen-compatible push endpoint: it dedups on (queue, partition,
// transactionId) like a real broker, records arrival order per partition, and can
// be told to fail every push after a number of accepted ones.
type fakeTarget struct {
	mu        sync.Mutex
	order     map[string][]string // "queue/partition" → transactionIds in arrival order
	seen      map[string]bool
	requests  int
	failAfter int // accepted requests before answering 500 to everything; 0 = never
	lastBody  []map[string]any

	// The configure and health routes (config.go): server is what GET /health names
	// ("" = comb); noKey makes configure warn as a comb without QUEEN_ENCRYPTION_KEY does;
	// configured holds each configure body by queue; auths the Authorization headers seen.
	server     string
	noKey      bool
	configured map[string]map[string]any
	auths      []string
}

func newFakeTarget() *fakeTarget {
	return &fakeTarget{order: map[string][]string{}, seen: map[string]bool{}}
}

func (f *fakeTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.auths = append(f.auths, r.Header.Get("Authorization"))
	f.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/health":
		server := f.server
		if server == "" {
			server = "comb"
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "healthy", "server": server})
		return
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/configure":
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, `{"error":"bad json"}`, http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		if f.configured == nil {
			f.configured = map[string]map[string]any{}
		}
		f.configured[fmt.Sprint(body["queue"])] = body
		f.mu.Unlock()
		ans := map[string]any{"configured": true, "queue": body["queue"], "options": body["options"]}
		if opts, _ := body["options"].(map[string]any); f.noKey && opts["encryptionEnabled"] == true {
			ans["warnings"] = []string{"encryptionEnabled: this server has no QUEEN_ENCRYPTION_KEY, so the queue's payloads are stored in plaintext"}
		}
		_ = json.NewEncoder(w).Encode(ans)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/api/v1/push" {
		http.NotFound(w, r)
		return
	}
	var body struct {
		Items []map[string]any `json:"items"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"error":"bad json"}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failAfter > 0 && f.requests >= f.failAfter {
		http.Error(w, `{"error":"storage unavailable"}`, http.StatusInternalServerError)
		return
	}
	f.requests++
	f.lastBody = body.Items
	res := make([]map[string]any, len(body.Items))
	for i, it := range body.Items {
		k := fmt.Sprintf("%v/%v", it["queue"], it["partition"])
		key := k + "/" + fmt.Sprint(it["transactionId"])
		status := "queued"
		if f.seen[key] {
			status = "duplicate"
		} else {
			f.seen[key] = true
			f.order[k] = append(f.order[k], fmt.Sprint(it["transactionId"]))
		}
		res[i] = map[string]any{"index": i, "status": status, "transactionId": it["transactionId"]}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(res)
}

// TestReplayResumesWithoutDuplicates: a replay interrupted by a failing target
// resumes from its state file; every message reaches the target exactly once, in
// per-partition push order, with its transactionId and payload (issue 5).
func TestReplayResumesWithoutDuplicates(t *testing.T) {
	for _, source := range []string{"data-dir", "dump-file"} {
		t.Run(source, func(t *testing.T) {
			d := datadirtest.NewBrokerDir(t, "orders", 3, 95, 10)
			target := newFakeTarget()
			target.failAfter = 7 // dies part-way through
			srv := httptest.NewServer(target)
			defer srv.Close()

			opts := Options{Target: srv.URL, Batch: 20, Concurrency: 2, Retries: 2,
				StateFile: filepath.Join(t.TempDir(), "replay.json")}
			if source == "data-dir" {
				opts.DataDir = d.Root
			} else {
				var dumped bytes.Buffer
				_, err := dump.Run(d.Root, dump.Options{Records: true, Payload: true}, &dumped)
				require.NoError(t, err)
				opts.DumpFile = filepath.Join(t.TempDir(), "dump.jsonl")
				require.NoError(t, os.WriteFile(opts.DumpFile, dumped.Bytes(), 0o644))
			}

			first, err := Run(context.Background(), opts)
			require.Error(t, err, "the target failed mid-way")
			target.mu.Lock()
			accepted := int64(len(target.seen))
			target.mu.Unlock()
			assert.Equal(t, accepted, first.Pushed, "counted what the target stored")
			assert.Less(t, first.Pushed, int64(3*95))
			require.FileExists(t, opts.StateFile)

			target.mu.Lock()
			target.failAfter = 0
			target.mu.Unlock()
			second, err := Run(context.Background(), opts)
			require.NoError(t, err)
			assert.Equal(t, int64(3*95), first.Pushed+second.Pushed, "every message exactly once")
			assert.Equal(t, first.Pushed, second.Skipped, "the resume skips exactly what the target accepted")
			assert.Zero(t, second.Duplicates, "nothing accepted is sent again")

			for p, want := range d.Pushed {
				assert.Equal(t, want, target.order["orders/"+p], "partition %s in push order", p)
			}
			third, err := Run(context.Background(), opts)
			require.NoError(t, err)
			assert.Zero(t, third.Pushed+third.Duplicates, "a finished replay sends nothing")
		})
	}
}

// TestReplayWithoutStateReliesOnDedup: re-running a replay without a state file
// re-sends everything with the same transactionIds, and the target's dedup answers
// duplicate for each; --to-queue renames the queue.
func TestReplayWithoutStateReliesOnDedup(t *testing.T) {
	d := datadirtest.NewBrokerDir(t, "orders", 2, 25, 5)
	target := newFakeTarget()
	srv := httptest.NewServer(target)
	defer srv.Close()
	opts := Options{Target: srv.URL, DataDir: d.Root, ToQueue: "orders-copy", Batch: 7}
	st, err := Run(context.Background(), opts)
	require.NoError(t, err)
	assert.Equal(t, int64(50), st.Pushed)
	st, err = Run(context.Background(), opts)
	require.NoError(t, err)
	assert.Equal(t, Stats{Partitions: 2, Configured: 1, Duplicates: 50, Requests: 8}, st)
	assert.Contains(t, target.configured, "orders-copy", "the renamed queue is configured like its source")
	assert.Len(t, target.order["orders-copy/p0"], 25)
	assert.Empty(t, target.order["orders/p0"])
	got := target.lastBody[len(target.lastBody)-1]
	assert.Equal(t, "orders-copy", got["queue"])
	assert.Equal(t, map[string]any{"part": got["partition"], "n": float64(24)}, got["payload"])
}

// TestReplayFilters: --from/--to select by message timestamp and --partition by name.
func TestReplayFilters(t *testing.T) {
	d := datadirtest.NewBrokerDir(t, "orders", 2, 40, 10) // segments 1 ms apart
	target := newFakeTarget()
	srv := httptest.NewServer(target)
	defer srv.Close()
	base := int64(1_785_402_000_000_000) // 2026-07-30T09:00:00Z
	st, err := Run(context.Background(), Options{Target: srv.URL, DataDir: d.Root, Partition: "p1",
		FromMicros: base + 1000, ToMicros: base + 2000})
	require.NoError(t, err)
	assert.Equal(t, int64(20), st.Pushed)
	assert.Equal(t, d.Pushed["p1"][10:30], target.order["orders/p1"])
	assert.Empty(t, target.order["orders/p0"])
}

func TestReplayRefusesAnotherReplaysState(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, os.WriteFile(state, []byte(`{"target":"http://a","source":"/x","partitions":{}}`), 0o644))
	_, err := Run(context.Background(), Options{Target: "http://b", DataDir: "/x", StateFile: state})
	assert.ErrorContains(t, err, "belongs to a replay")
}

// TestReplayUnnamedPartitionByID: a partition the metadata does not name (fsck's
// orphan_partition) is replayed by id into names given on the command line.
func TestReplayUnnamedPartitionByID(t *testing.T) {
	d := datadirtest.NewBrokerDir(t, "orders", 2, 12, 4)
	// Lost metadata: no partition is named (the journal gone, and the commit log
	// with its metadata entries; Close left every record in the files).
	require.NoError(t, os.Remove(filepath.Join(d.Root, layout.Meta, meta.JournalFile)))
	require.NoError(t, os.RemoveAll(filepath.Join(d.Root, layout.CommitLog)))
	var id string
	for k, p := range d.Names {
		if p.Name == "p1" {
			id = datadir.IDString(k)
		}
	}
	target := newFakeTarget()
	srv := httptest.NewServer(target)
	defer srv.Close()

	_, err := Run(context.Background(), Options{Target: srv.URL, DataDir: d.Root, PartitionID: id})
	assert.ErrorContains(t, err, "--to-queue and --to-partition")

	st, err := Run(context.Background(), Options{Target: srv.URL, DataDir: d.Root, PartitionID: id, ToQueue: "rescued", ToPartition: "p1"})
	require.NoError(t, err)
	assert.Equal(t, int64(12), st.Pushed)
	assert.Equal(t, d.Pushed["p1"], target.order["rescued/p1"])
}
