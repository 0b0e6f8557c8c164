package httpapi

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/queenimport"
)

// fakeMigrator is the in-memory twin of *queenimport.Jobs: it records what it was asked.
type fakeMigrator struct {
	mu      sync.Mutex
	running bool
	started []queenimport.JobRequest
	urls    []string
}

func (f *fakeMigrator) Start(req queenimport.JobRequest) (queenimport.JobStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running {
		return queenimport.JobStatus{Status: "restoring"}, queenimport.ErrJobRunning
	}
	f.running = true
	f.started = append(f.started, req)
	return queenimport.JobStatus{Status: "dumping", Phase: "snapshot", Follow: req.Follow}, nil
}

func (f *fakeMigrator) Status() queenimport.JobStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.running {
		return queenimport.JobStatus{Status: "idle"}
	}
	return queenimport.JobStatus{Status: "restoring", CurrentStep: "Following", ElapsedSeconds: 1.5, Phase: "following", Follow: true}
}

func (f *fakeMigrator) Cutover() (queenimport.JobStatus, error) {
	if !f.running {
		return queenimport.JobStatus{Status: "idle"}, queenimport.ErrNoJob
	}
	return queenimport.JobStatus{Status: "restoring", Phase: "cutover", Follow: true}, nil
}

func (f *fakeMigrator) Stop() (queenimport.JobStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.running {
		return queenimport.JobStatus{Status: "idle"}, queenimport.ErrNoJob
	}
	f.running = false
	return queenimport.JobStatus{Status: "complete", Phase: "done"}, nil
}

func (f *fakeMigrator) Reset() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running {
		return queenimport.ErrJobRunning
	}
	return nil
}

func (f *fakeMigrator) Validate(_ context.Context, url string) (queenimport.Validation, error) {
	f.urls = append(f.urls, url)
	if url == "postgres://down" {
		return queenimport.Validation{}, errors.New("connection refused")
	}
	return queenimport.Validation{Success: true, AllMatch: true, Differences: []string{},
		Tables: []queenimport.TableCount{{Table: "messages", SourceCount: 3, TargetCount: 3, Match: true}}}, nil
}

func (f *fakeMigrator) TestConnection(_ context.Context, url string) (string, error) {
	f.urls = append(f.urls, url)
	if url == "postgres://down" {
		return "", errors.New("connection refused")
	}
	return "PostgreSQL 16", nil
}

// Queen's dashboard Migration view against comb: Queen's request and answer shapes
// (server/src/routes/migration.cpp), the form naming the Queen database to import from.
func TestMigrationRoutesSpeakQueensShapes(t *testing.T) {
	m := &fakeMigrator{}
	ts := startServer(t, newFake(), Config{Migration: m})
	form := `{"host":"db.local","port":"5433","database":"queen","user":"q u","password":"p@ss/w","ssl":true}`

	requireJSON(t, ts.do("POST", "/api/v1/migration/test-connection", form), 200,
		`{"success":true,"message":"Connection successful","version":"PostgreSQL 16"}`)
	assert.Equal(t, "postgres://q%20u:p%40ss%2Fw@db.local:5433/queen?connect_timeout=10&sslmode=require", m.urls[0],
		"the form becomes a URL with its parts escaped")
	requireJSON(t, ts.do("POST", "/api/v1/migration/test-connection", `{"url":"postgres://down"}`), 200,
		`{"success":false,"message":"Connection failed","error":"connection refused"}`)
	requireJSON(t, ts.do("POST", "/api/v1/migration/test-connection", `{"host":"db"}`), 400,
		`{"error":"host, database, and user are required (or url)"}`)
	requireJSON(t, ts.do("POST", "/api/v1/migration/start", `{"url":"mysql://x"}`), 400, `{"error":"url must be a postgres:// URL"}`)
	requireJSON(t, ts.do("POST", "/api/v1/migration/start", `{"host":"db","database":"q","user":"u","port":"x"}`), 400,
		`{"error":"port must be a TCP port number"}`)
	r := ts.do("POST", "/api/v1/migration/start", `{`)
	assert.Equal(t, 400, r.status)

	requireJSON(t, ts.do("GET", "/api/v1/migration/status", ""), 200, `{"status":"idle","currentStep":"","elapsedSeconds":0,
		"follow":false,"imported":{"queues":0,"partitions":0,"messages":0,"messagesSkipped":0,"cursors":0,"leases":0,"subscriptions":0,"deadLetters":0,"traces":0},
		"followPasses":0,"followMessages":0,"followBoundExact":false}`)
	requireJSON(t, ts.do("POST", "/api/v1/migration/cutover", ""), 409, `{"error":"no migration is running"}`)

	r = ts.do("POST", "/api/v1/migration/start", `{"url":"postgres://queen@db/queen","follow":true,"overlapMs":2000,"intervalMs":50}`)
	require.Equal(t, 202, r.status, string(r.body))
	body := r.json(t).(map[string]any)
	assert.Equal(t, "started", body["status"])
	assert.Equal(t, "Migration started. Poll /api/v1/migration/status for progress.", body["message"])
	require.Len(t, m.started, 1)
	assert.Equal(t, queenimport.JobRequest{URL: "postgres://queen@db/queen", Follow: true,
		FollowOptions: queenimport.FollowOptions{Overlap: 2 * time.Second, Interval: 50 * time.Millisecond}}, m.started[0])
	requireJSON(t, ts.do("POST", "/api/v1/migration/start", form), 409, `{"error":"Migration already in progress"}`)
	requireJSON(t, ts.do("POST", "/api/v1/migration/reset", ""), 409, `{"error":"Cannot reset while migration is in progress"}`)
	st := obj(t, ts.do("GET", "/api/v1/migration/status", ""))
	assert.Equal(t, "restoring", st["status"])
	assert.Equal(t, 1.5, st["elapsedSeconds"])
	r = ts.do("POST", "/api/v1/migration/cutover", "")
	assert.Equal(t, 202, r.status)
	assert.Equal(t, "cutover", r.json(t).(map[string]any)["phase"])
	r = ts.do("POST", "/api/v1/migration/stop", "")
	assert.Equal(t, 202, r.status)
	assert.Equal(t, "complete", r.json(t).(map[string]any)["status"])
	requireJSON(t, ts.do("POST", "/api/v1/migration/reset", ""), 200, `{"status":"idle","message":"Migration state reset"}`)

	requireJSON(t, ts.do("POST", "/api/v1/migration/validate", form), 200, `{"success":true,"allMatch":true,
		"tables":[{"table":"messages","sourceCount":3,"targetCount":3,"match":true}],"differences":[]}`)
	requireJSON(t, ts.do("POST", "/api/v1/migration/validate", `{"url":"postgres://down"}`), 500,
		`{"success":false,"error":"Failed to compare with the source: connection refused"}`)

	assert.Equal(t, 404, ts.do("GET", "/api/v1/migration/start", "").status)
	assert.Equal(t, 404, ts.do("POST", "/api/v1/migration/status", "").status)
	assert.Equal(t, 404, ts.do("POST", "/api/v1/migration/nope", "").status)
}
