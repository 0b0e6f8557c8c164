package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/combmq/comb/seal"
)

// Options configures Run. Exactly one of DataDir and DumpFile is the source.
type Options struct {
	Target   string // base URL of a running comb or Queen-compatible broker, e.g. http://127.0.0.1:6632
	DataDir  string // offline source: a stopped (or --force'd) data directory
	DumpFile string // source: a `comb dump --payload` file; "-" reads stdin

	Queue, Partition string // source filters (names); "" = all
	PartitionID      string // source filter: one partition by id (data directory only)
	ToQueue          string // push into this queue instead of the source queue
	// ToPartition pushes into this partition name instead of the source's (needed for a
	// partition the metadata does not name, e.g. one found by fsck as orphan_partition).
	ToPartition string

	FromMicros, ToMicros int64 // inclusive range of message timestamps (createdAt); 0 = open

	Batch       int     // messages per push request; default 500
	Rate        float64 // messages per second across all partitions; 0 = unlimited
	Concurrency int     // partitions pushed in parallel; default 8
	Retries     int     // attempts per push on 5xx or network errors; default 8

	// StateFile, when set, records per partition the last offset the target accepted,
	// so an interrupted replay resumes after it. Messages re-sent around an
	// interruption keep their transactionIds, so the target's dedup drops them.
	StateFile string

	// Keys open the encrypted payloads of a data directory (queues with encryptionEnabled,
	// spec 9.2), which are pushed to the target in clear (it seals them again if its queue is
	// encrypted). nil: the first encrypted payload stops the replay with an error.
	Keys *seal.Keyring

	// NoConfig leaves the target queues' configuration alone; by default each is configured
	// like its source queue before the first push (config.go).
	NoConfig bool
	// AllowPlaintext pushes an encryptionEnabled queue's payloads into a target that would
	// store them in plaintext (or may: not comb, or NoConfig); by default that is refused with
	// ErrPlaintextTarget before any push.
	AllowPlaintext bool
	// Token is sent as a bearer token, for a target with JWT auth (read-write role).
	Token string

	Progress io.Writer    // progress bar destination (nil = none)
	Client   *http.Client // nil = a client with a 60 s timeout
}

// Stats counts what Run did.
type Stats struct {
	Partitions int   // source partitions visited
	Configured int   // target queues configured like their source queue
	Pushed     int64 // messages the target stored (status queued)
	Duplicates int64 // messages the target already had (status duplicate)
	Skipped    int64 // messages skipped because the resume state says they were sent
	Requests   int64 // push requests answered 201
}

// replayRecord is one message to re-push.
type replayRecord struct {
	Offset        uint64
	TsMicros      int64
	TransactionID string
	TraceID       string
	Payload       json.RawMessage
}

type pushBody struct {
	Items []pushBodyItem `json:"items"`
}

type pushBodyItem struct {
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	TransactionID string          `json:"transactionId,omitempty"`
	TraceID       string          `json:"traceId,omitempty"`
	Payload       json.RawMessage `json:"payload"`
}

// replayer carries one Run's shared state.
type replayer struct {
	opts   Options
	client *http.Client
	state  *replayState
	lim    *limiter
	bar    *progressbar.ProgressBar
	stats  Stats
	// targets is what configuring each target queue found (carryConfig); read-only once the
	// pushes start.
	targets map[string]targetQueue
	pushed  atomic.Int64
	dups    atomic.Int64
	skip    atomic.Int64
	reqs    atomic.Int64
}

// Run pushes the selected messages to opts.Target over HTTP, partition by
// partition in offset order (one push in flight per partition, so per-partition
// order is the source's), Concurrency partitions at a time. It stops at the first
// push the target refuses (4xx, or an item answered "failed"), wrapping ErrTarget,
// and on ctx cancellation; either way the state file (if any) holds what was
// accepted, so running it again resumes without duplicates. A data directory's
// partition that cannot be read to its end (a damaged segment) is pushed up to the
// damage and the others go on; the run then fails with every such partition named,
// wrapping ErrSourceDamaged (and datadir.ErrCommitLogDamaged when the commit log
// has entries it cannot read).
func Run(ctx context.Context, opts Options) (Stats, error) {
	if (opts.DataDir == "") == (opts.DumpFile == "") {
		return Stats{}, errors.New("replay: exactly one source (a data directory or a dump file) is required")
	}
	if opts.Target == "" {
		return Stats{}, errors.New("replay: a target URL is required")
	}
	opts.Target = strings.TrimRight(opts.Target, "/")
	if opts.Batch <= 0 {
		opts.Batch = 500
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	if opts.Retries <= 0 {
		opts.Retries = 8
	}
	r := &replayer{opts: opts, client: opts.Client, lim: newLimiter(opts.Rate)}
	if r.client == nil {
		r.client = &http.Client{Timeout: 60 * time.Second}
	}
	source := opts.DumpFile
	if source == "" {
		source = opts.DataDir
	}
	st, err := loadReplayState(opts.StateFile, opts.Target, source)
	if err != nil {
		return Stats{}, err
	}
	r.state = st
	if opts.DataDir != "" {
		err = r.fromDataDir(ctx)
	} else {
		err = r.fromDump(ctx)
	}
	if r.bar != nil {
		_ = r.bar.Finish()
	}
	if serr := r.state.save(); serr != nil && err == nil {
		err = serr
	}
	r.stats.Pushed, r.stats.Duplicates, r.stats.Skipped, r.stats.Requests = r.pushed.Load(), r.dups.Load(), r.skip.Load(), r.reqs.Load()
	return r.stats, err
}

func (r *replayer) newBar(total int64) {
	if r.opts.Progress == nil {
		return
	}
	r.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(r.opts.Progress),
		progressbar.OptionSetDescription("replay"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("msg"),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
}

// sender batches one partition's records and pushes them in order.
type sender struct {
	r                *replayer
	key              string
	queue, partition string
	items            []pushBodyItem
	last             uint64 // offset of the newest record in items
}

// newSender starts a partition stream; key names the source partition in the
// resume state, queue and partition are the target's names.
func (r *replayer) newSender(key, queue, partition string) *sender {
	if r.opts.ToQueue != "" {
		queue = r.opts.ToQueue
	}
	if r.opts.ToPartition != "" {
		partition = r.opts.ToPartition
	}
	return &sender{r: r, key: key, queue: queue, partition: partition}
}

// add queues one record, skipping what the resume state or the time filter exclude.
func (s *sender) add(ctx context.Context, rec replayRecord) error {
	o := s.r.opts
	if rec.Offset != 0 && rec.Offset <= s.r.state.done(s.key) {
		s.r.skip.Add(1)
		return nil
	}
	if (o.FromMicros != 0 && rec.TsMicros < o.FromMicros) || (o.ToMicros != 0 && rec.TsMicros > o.ToMicros) {
		return nil
	}
	payload := rec.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	s.items = append(s.items, pushBodyItem{Queue: s.queue, Partition: s.partition, TransactionID: rec.TransactionID, TraceID: rec.TraceID, Payload: payload})
	s.last = rec.Offset
	if len(s.items) >= o.Batch {
		return s.flush(ctx)
	}
	return nil
}

// flush pushes the queued records (retrying 5xx and network errors with the same
// transactionIds) and records the last offset in the resume state.
func (s *sender) flush(ctx context.Context) error {
	if len(s.items) == 0 {
		return nil
	}
	if err := s.r.lim.wait(ctx, len(s.items)); err != nil {
		return err
	}
	body, err := json.Marshal(pushBody{Items: s.items})
	if err != nil {
		return err
	}
	res, err := s.r.push(ctx, body)
	if err != nil {
		return fmt.Errorf("queue %q partition %q up to offset %d: %w", s.queue, s.partition, s.last, err)
	}
	for i, it := range res {
		switch it.Status {
		case "queued", "buffered":
			s.r.pushed.Add(1)
		case "duplicate":
			s.r.dups.Add(1)
		default:
			return fmt.Errorf("queue %q partition %q transactionId %q: %w: status %q %s", s.queue, s.partition, s.items[min(i, len(s.items)-1)].TransactionID, ErrTarget, it.Status, it.Error)
		}
	}
	if len(res) != len(s.items) {
		return fmt.Errorf("queue %q partition %q: %w: %d results for %d items", s.queue, s.partition, ErrTarget, len(res), len(s.items))
	}
	if s.r.bar != nil {
		_ = s.r.bar.Add(len(s.items))
	}
	if s.last != 0 {
		s.r.state.advance(s.key, s.last)
	}
	s.items = s.items[:0]
	return nil
}

type pushAnswer struct {
	Status string `json:"status"`
	Error  string `json:"error"`
}

// push sends one body, retrying 5xx and network errors with exponential backoff.
// Cancelling ctx stops further attempts but never cuts a request in flight: the
// target may already have stored it, and only a read answer lets flush record the
// progress, so an interrupted replay would otherwise re-send (harmlessly, thanks
// to dedup, but not "without duplicates") what the target accepted.
func (r *replayer) push(ctx context.Context, body []byte) ([]pushAnswer, error) {
	delay := 100 * time.Millisecond
	var last error
	for attempt := 0; attempt < r.opts.Retries; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if attempt > 0 {
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C:
			}
			delay = min(delay*2, 5*time.Second)
		}
		req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodPost, r.opts.Target+"/api/v1/push", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		r.authorize(req)
		resp, err := r.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			last = err
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case err != nil:
			last = err
			continue
		case resp.StatusCode >= 500:
			last = fmt.Errorf("target answered %d: %s", resp.StatusCode, clip(b))
			continue
		case resp.StatusCode != http.StatusCreated:
			return nil, fmt.Errorf("%w: answered %d: %s", ErrTarget, resp.StatusCode, clip(b))
		}
		var res []pushAnswer
		if err := json.Unmarshal(b, &res); err != nil {
			return nil, fmt.Errorf("%w: push answer: %v", ErrTarget, err)
		}
		r.reqs.Add(1)
		return res, nil
	}
	return nil, fmt.Errorf("giving up after %d attempts: %w", r.opts.Retries, last)
}

func clip(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}

// limiter paces pushes to a rate of messages per second across all senders.
type limiter struct {
	mu   sync.Mutex
	rate float64
	next time.Time
}

func newLimiter(rate float64) *limiter {
	if rate <= 0 {
		return nil
	}
	return &limiter{rate: rate}
}

// wait blocks until n more messages may go out.
func (l *limiter) wait(ctx context.Context, n int) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	now := time.Now()
	if l.next.Before(now) {
		l.next = now
	}
	at := l.next
	l.next = l.next.Add(time.Duration(float64(n) / l.rate * float64(time.Second)))
	l.mu.Unlock()
	d := time.Until(at)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
