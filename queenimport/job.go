package queenimport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/seal"
)

// Jobs runs an import inside a running comb server (`comb import --target`, and Queen's
// dashboard Migration view, /api/v1/migration/*): at most one at a time, into the server's own
// broker, so every write goes through its commit log and a cluster replicates it. The job's
// state lives in memory: after a server restart, start it again (an import is idempotent).
type Jobs struct {
	b   *broker.Broker
	key *seal.Key

	mu  sync.Mutex
	cur *job
}

// NewJobs returns the job runner of b; key is Queen's QUEEN_ENCRYPTION_KEY (nil refuses
// encrypted messages).
func NewJobs(b *broker.Broker, key *seal.Key) *Jobs { return &Jobs{b: b, key: key} }

// JobRequest starts a job.
type JobRequest struct {
	URL    string // Queen's PostgreSQL
	Follow bool   // keep copying new messages after the snapshot import, until Stop
	FollowOptions
}

// JobStatus is a job's state in the shape of Queen's GET /api/v1/migration/status
// (status idle|dumping|restoring|complete|error, currentStep, elapsedSeconds, error,
// restoreOutput), with comb's own fields after them.
type JobStatus struct {
	Status         string  `json:"status"`
	CurrentStep    string  `json:"currentStep"`
	ElapsedSeconds float64 `json:"elapsedSeconds"`
	Error          string  `json:"error,omitempty"`
	RestoreOutput  string  `json:"restoreOutput,omitempty"`

	// Phase: "snapshot" (the import), "following" (passes), "cutover", "done", "failed".
	Phase     string `json:"phase,omitempty"`
	Follow    bool   `json:"follow"`
	CutoverAt string `json:"cutoverAt,omitempty"` // when the cutover finished (RFC 3339)
	// Imported counts the snapshot import (and the cutover's, added).
	Imported JobCounts `json:"imported"`
	// FollowPasses and FollowMessages count the passes and the messages they added;
	// FollowedTo is the bound of the last pass (rows created before it are copied) and
	// FollowBoundExact whether it came from Queen's open transactions (else the clock minus
	// the overlap).
	FollowPasses     int64  `json:"followPasses"`
	FollowMessages   int64  `json:"followMessages"`
	FollowedTo       string `json:"followedTo,omitempty"`
	FollowBoundExact bool   `json:"followBoundExact"`
}

// JobCounts are a Report's counts on the wire.
type JobCounts struct {
	Queues          int   `json:"queues"`
	Partitions      int   `json:"partitions"`
	Messages        int64 `json:"messages"`
	MessagesSkipped int64 `json:"messagesSkipped"`
	Cursors         int   `json:"cursors"`
	Leases          int   `json:"leases"`
	Subscriptions   int   `json:"subscriptions"`
	DeadLetters     int   `json:"deadLetters"`
	Traces          int   `json:"traces"`
}

func (c *JobCounts) add(r Report) {
	c.Queues += r.Queues
	c.Partitions += r.Partitions
	c.Messages += r.Messages
	c.MessagesSkipped += r.MessagesSkipped
	c.Cursors += r.Cursors
	c.Leases += r.Leases
	c.Subscriptions += r.Subscriptions
	c.DeadLetters += r.DeadLetters
	c.Traces += r.Traces
}

// Errors of Jobs.
var (
	//lint:ignore ST1005 Queen's answer text, verbatim
	ErrJobRunning = errors.New("Migration already in progress")
	ErrNoJob      = errors.New("no migration is running")
	ErrNotFollow  = errors.New("the migration does not follow (start it with follow)")
	// ErrSnapshotRunning: a cutover is asked before the snapshot import is in (ask again
	// once the status's phase is "following").
	ErrSnapshotRunning = errors.New("the snapshot import is still running: cut over once the phase is following")
)

type job struct {
	start  time.Time
	cancel context.CancelFunc
	done   chan struct{}
	cutReq chan chan struct{}

	mu     sync.Mutex
	st     JobStatus
	out    bytes.Buffer
	finish time.Time
}

// Start begins a job in the background. Errors: ErrJobRunning while one runs.
func (j *Jobs) Start(req JobRequest) (JobStatus, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.cur != nil && j.cur.running() {
		return j.cur.status(), ErrJobRunning
	}
	ctx, cancel := context.WithCancel(context.Background())
	jb := &job{start: time.Now(), cancel: cancel, done: make(chan struct{}), cutReq: make(chan chan struct{})}
	jb.st = JobStatus{Status: "dumping", CurrentStep: "Connecting to Queen's PostgreSQL...", Phase: "snapshot", Follow: req.Follow}
	j.cur = jb
	go jb.run(ctx, j.b, j.key, req)
	return jb.status(), nil
}

// Status is the current job's state ({"status":"idle"} when none ran since the last Reset).
func (j *Jobs) Status() JobStatus {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.cur == nil {
		return JobStatus{Status: "idle"}
	}
	return j.cur.status()
}

// Cutover asks a following job for its cutover and returns at once; the status's cutoverAt
// is set once it is done. Errors: ErrNoJob, ErrNotFollow.
func (j *Jobs) Cutover() (JobStatus, error) {
	j.mu.Lock()
	jb := j.cur
	j.mu.Unlock()
	if jb == nil || !jb.running() {
		return j.Status(), ErrNoJob
	}
	if st := jb.status(); !st.Follow {
		return st, ErrNotFollow
	} else if st.Phase == "snapshot" {
		return st, ErrSnapshotRunning
	}
	ack := make(chan struct{})
	select {
	case jb.cutReq <- ack:
		<-ack // the job took it: its status says "cutover" now
	case <-jb.done:
	}
	return jb.status(), nil
}

// Stop ends a running job (following: after the pass under way) and waits for it. Errors:
// ErrNoJob.
func (j *Jobs) Stop() (JobStatus, error) {
	j.mu.Lock()
	jb := j.cur
	j.mu.Unlock()
	if jb == nil || !jb.running() {
		return j.Status(), ErrNoJob
	}
	jb.cancel()
	<-jb.done
	return jb.status(), nil
}

// Reset forgets a finished job. Errors: ErrJobRunning while one runs.
func (j *Jobs) Reset() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.cur != nil && j.cur.running() {
		return ErrJobRunning
	}
	j.cur = nil
	return nil
}

// Close stops a running job (the server shuts down).
func (j *Jobs) Close() { _, _ = j.Stop() }

func (jb *job) running() bool {
	select {
	case <-jb.done:
		return false
	default:
		return true
	}
}

func (jb *job) status() JobStatus {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	st := jb.st
	end := time.Now()
	if !jb.finish.IsZero() {
		end = jb.finish
	}
	st.ElapsedSeconds = float64(end.Sub(jb.start).Milliseconds()/100) / 10
	st.RestoreOutput = jb.out.String()
	return st
}

func (jb *job) update(fn func(*JobStatus)) {
	jb.mu.Lock()
	fn(&jb.st)
	jb.mu.Unlock()
}

// Write collects the import's progress lines (restoreOutput), keeping the last 16 KiB.
func (jb *job) Write(p []byte) (int, error) {
	jb.mu.Lock()
	defer jb.mu.Unlock()
	jb.out.Write(p)
	if n := jb.out.Len(); n > 16<<10 {
		jb.out.Next(n - 16<<10)
	}
	return len(p), nil
}

func (jb *job) run(ctx context.Context, b *broker.Broker, key *seal.Key, req JobRequest) {
	defer close(jb.done)
	err := jb.work(ctx, b, key, req)
	jb.mu.Lock()
	jb.finish = time.Now()
	switch {
	case err != nil && errors.Is(err, context.Canceled) && jb.st.Phase != "following":
		jb.st.Status, jb.st.Error = "error", "stopped during the "+jb.st.Phase+": "+err.Error()
		jb.st.Phase = "failed"
	case err != nil && !errors.Is(err, context.Canceled):
		jb.st.Status, jb.st.Phase, jb.st.Error = "error", "failed", err.Error()
	default:
		jb.st.Status, jb.st.Phase, jb.st.CurrentStep = "complete", "done", "Migration complete"
	}
	jb.mu.Unlock()
}

func (jb *job) work(ctx context.Context, b *broker.Broker, key *seal.Key, req JobRequest) error {
	conn, err := pgx.Connect(ctx, req.URL)
	if err != nil {
		return fmt.Errorf("connect to Queen's PostgreSQL: %w", err)
	}
	defer conn.Close(context.Background())
	f := NewFollower(conn, b, key, req.FollowOptions)
	opts := Options{Key: key, Progress: jb}
	if req.Follow {
		if err := f.Start(ctx); err != nil {
			return err
		}
		opts.State = f.State()
	}
	jb.update(func(s *JobStatus) {
		s.Status, s.CurrentStep = "restoring", "Copying queues, partitions, messages, cursors, leases and dead letters..."
	})
	rep, err := Import(ctx, conn, b, opts)
	jb.update(func(s *JobStatus) { s.Imported.add(rep) })
	if err != nil || !req.Follow {
		return err
	}
	jb.update(func(s *JobStatus) {
		s.Phase, s.CurrentStep = "following", "Following: copying messages that reach Queen (cutover when its consumers are stopped)"
	})
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ack := <-jb.cutReq:
			jb.update(func(s *JobStatus) { s.Phase, s.CurrentStep = "cutover", "Cutover: syncing cursors and leases..." })
			close(ack)
			rep, err := f.Cutover(ctx, Options{Progress: jb})
			jb.update(func(s *JobStatus) {
				s.Imported.add(rep)
				s.FollowPasses, s.FollowMessages = f.Passes, f.Messages
			})
			if err != nil {
				return fmt.Errorf("cutover: %w", err)
			}
			jb.update(func(s *JobStatus) {
				s.Phase, s.CutoverAt = "following", time.Now().UTC().Format(time.RFC3339Nano)
				s.CurrentStep = "Cutover done: following until producers are moved to comb (then stop)"
			})
		case <-t.C:
			if _, err := f.Pass(ctx); err != nil {
				return err
			}
			u, exact := f.Bound()
			jb.update(func(s *JobStatus) {
				s.FollowPasses, s.FollowMessages = f.Passes, f.Messages
				s.FollowedTo, s.FollowBoundExact = u.UTC().Format(time.RFC3339Nano), exact
			})
			t.Reset(f.Options().Interval)
		}
	}
}

// TestConnection is the package's TestConnection (the Migrator method of the HTTP layer).
func (j *Jobs) TestConnection(ctx context.Context, url string) (string, error) {
	return TestConnection(ctx, url)
}

// TestConnection connects to url and returns the server's version() (Queen's
// test-connection answer). Errors: the connection's or the query's.
func TestConnection(ctx context.Context, url string) (string, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	var v string
	if err := conn.QueryRow(ctx, "SELECT version()").Scan(&v); err != nil {
		return "", err
	}
	return v, nil
}

// Validation is Queen's POST /api/v1/migration/validate answer (success, allMatch, tables of
// {table, sourceCount, targetCount, match}: here Queen's rows and what comb holds of them),
// with Verify's differences after it (comb's).
type Validation struct {
	Success     bool         `json:"success"`
	AllMatch    bool         `json:"allMatch"`
	Tables      []TableCount `json:"tables"`
	Differences []string     `json:"differences"`
}

// TableCount is one row of a Validation.
type TableCount struct {
	Table       string `json:"table"`
	SourceCount int64  `json:"sourceCount"`
	TargetCount int64  `json:"targetCount"`
	Match       bool   `json:"match"`
}

// Validate compares Queen's database at url with the job runner's broker as Verify does.
// allMatch is true when the counts match and Verify finds no difference. Errors: the
// connection's or the comparison's.
func (j *Jobs) Validate(ctx context.Context, url string) (Validation, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return Validation{}, fmt.Errorf("connect to Queen's PostgreSQL: %w", err)
	}
	defer conn.Close(context.Background())
	diffs, tally, err := compare(ctx, conn, j.b, j.key)
	if err != nil {
		return Validation{}, err
	}
	v := Validation{Success: true, AllMatch: len(diffs) == 0, Differences: make([]string, len(diffs))}
	for i, d := range diffs {
		v.Differences[i] = d.String()
	}
	for _, t := range tally {
		v.Tables = append(v.Tables, TableCount{Table: t.Table, SourceCount: t.Queen, TargetCount: t.Comb, Match: t.Queen == t.Comb})
		v.AllMatch = v.AllMatch && t.Queen == t.Comb
	}
	return v, nil
}
