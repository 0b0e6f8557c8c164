package segment

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SyncPolicy says when appended bytes are made durable (see Committer).
type SyncPolicy uint8

// Sync policies. What each promises after a crash is documented on Committer.
const (
	SyncAlways SyncPolicy = iota
	SyncInterval
	SyncNever
)

// String returns "always", "interval" or "never".
func (p SyncPolicy) String() string {
	switch p {
	case SyncAlways:
		return "always"
	case SyncInterval:
		return "interval"
	case SyncNever:
		return "never"
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// ParseSyncPolicy parses "always" | "interval" | "never" (case-insensitive);
// anything else returns an error wrapping ErrBadPolicy.
func ParseSyncPolicy(s string) (SyncPolicy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "always":
		return SyncAlways, nil
	case "interval":
		return SyncInterval, nil
	case "never":
		return SyncNever, nil
	}
	return 0, fmt.Errorf("sync policy %q: %w", s, ErrBadPolicy)
}

// Committer is group commit across many Logs. With SyncAlways a Commit
// first tries to sync its log itself (at most directSyncs at a time over all
// logs): callers of one log that arrive while its fdatasync runs queue on the
// log and share the next one, so a busy log makes one fdatasync per sync
// time and independent logs never wait for each other. When directSyncs are
// already in flight the Commit joins the shared pass instead: one background
// goroutine runs sync passes, each fdatasyncing (or, with SetSyncFS, from
// syncFSMin logs on one file system, one syncfs) every Log that has unsynced appends and then
// releasing every Commit that was waiting when the pass started.
//
// Why both: on the project machine 16 appenders on 16 logs got 15,000
// fdatasyncs/s at 0.9 ms p50 each syncing its own log, against 533 syncfs
// passes/s (1.1 ms) for one shared pass; a shared pass makes every request
// wait for the slowest log of the pass plus the pass already running when it
// arrived. The pass remains for fan-in beyond directSyncs concurrent logs,
// where one syncfs beats hundreds of fdatasyncs.
//
// What each policy promises after a crash (power loss or kernel panic; a
// process crash alone loses nothing that Append wrote):
//   - SyncAlways: Commit returns only once everything appended to the log
//     before the call is on stable storage, so an acknowledged push survives.
//     Appenders arriving while a pass runs are served by the next pass, so a
//     busy server makes about one pass per fdatasync time, not one per push.
//   - SyncInterval: Commit returns at once; a pass runs every interval, so a
//     crash loses at most the last interval (plus one pass) of acknowledged
//     appends. Nothing older is ever lost.
//   - SyncNever: nothing is synced except by Log.Close; a crash may lose
//     anything the kernel had not written back (tests and benchmarks).
//
// In every policy recovery truncates a torn tail, so what survives is always
// a prefix of what was appended.
type Committer struct {
	policy   SyncPolicy
	interval time.Duration

	mu      sync.Mutex
	dirty   map[*Log]struct{}
	marked  map[*Log]struct{} // Mark's set, taken by Flush (flush.go)
	next    *pass             // the pass that will pick up logs marked dirty now
	closed  bool
	closedA atomic.Bool // closed, readable without mu (the direct path takes no lock)
	kick    chan struct{}
	stopped chan struct{}

	direct chan struct{} // SyncAlways: one token per direct sync in flight

	workers int         // fdatasyncs in flight per pass (syncWorkers; benchmarks vary it)
	syncFS  atomic.Bool // SetSyncFS: one syncfs per file system from syncFSMin logs on

	latMu sync.Mutex
	lat   []int64 // pass durations (µs) since the last SyncLatencies
	// onSync, when set, is called with every duration instead (OnSync).
	onSync atomic.Pointer[func(micros int64)]
}

// pass is one sync pass: done closes when it has finished; errs holds the
// logs whose sync failed.
type pass struct {
	done chan struct{}
	errs map[*Log]error
}

func newPass() *pass { return &pass{done: make(chan struct{})} }

// syncWorkers is how many fdatasyncs one pass keeps in flight, each syncing
// one log through its own descriptor: the device serves parallel flushes of
// different files better than a serial loop, and each blocks an OS thread.
// On the project machine (2 vCPUs, ext4 on virtio) a pass over 1,000 dirty
// logs took 497 ms serial, 232 ms with 8 in flight and 133 ms with 16, with
// no further gain at 64 (docs/benchmarks.md, "Flush pass: fdatasync per file
// or syncfs").
const syncWorkers = 16

// logsPerWorker is how many logs of a pass each fdatasync worker gets at
// least: a pass of a few dozen logs costs ~0.5 ms per log serial on the
// project machine, so a small pass (the usual one: the logs written in the
// last flush interval) syncs one log at a time and keeps the parallel workers
// for the passes where they pay (100 logs: 4 workers, 512 and more: 16).
const logsPerWorker = 32

// passWorkers is how many workers sync n logs, at most max.
func passWorkers(max, n int) int {
	return min(max, (n+logsPerWorker-1)/logsPerWorker)
}

// directSyncs bounds the SyncAlways Commits that fdatasync their own log at
// the same time; more join the shared pass. 16 parallel fdatasyncs already
// reach the device's ceiling on the project machine (32 gave +3 % at 1.6× the
// latency), and each one blocks an OS thread.
const directSyncs = 16

// syncFSMin is the number of dirty logs on one file system from which a pass
// with SetSyncFS(true) uses one syncfs(2) instead of an fdatasync per log.
const syncFSMin = 8

// maxLatencies bounds the latency buffer between SyncLatencies calls.
const maxLatencies = 4096

// NewCommitter starts a committer. interval is the SyncInterval period
// (default 10 ms when ≤ 0); SyncAlways passes run back to back while Commits
// wait, with no timer.
func NewCommitter(p SyncPolicy, interval time.Duration) *Committer {
	if interval <= 0 {
		interval = 10 * time.Millisecond
	}
	c := &Committer{policy: p, interval: interval, dirty: map[*Log]struct{}{}, marked: map[*Log]struct{}{}, next: newPass(),
		kick: make(chan struct{}, 1), stopped: make(chan struct{}), direct: make(chan struct{}, directSyncs),
		workers: syncWorkers}
	if p == SyncNever {
		close(c.stopped)
		return c
	}
	go c.loop()
	return c
}

// Commit makes l's appends durable according to the policy: with SyncAlways
// it blocks until an fdatasync of l (its own, or one it queued behind on l),
// or a sync pass, that started after the call has flushed l, and returns that
// sync's error for l; otherwise it marks l for the next pass
// (SyncInterval) or does nothing (SyncNever) and returns nil. Safe for
// concurrent use. ErrClosed after Close.
func (c *Committer) Commit(l *Log) error {
	if c.policy == SyncNever {
		return nil
	}
	if c.closedA.Load() {
		return ErrClosed
	}
	if c.policy == SyncInterval {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return ErrClosed
		}
		if l.dirty() {
			c.dirty[l] = struct{}{}
		}
		return nil
	}
	if !l.dirty() {
		return nil // everything appended is already durable
	}
	if l.syncers.Load() > 0 {
		// A sync of l is in flight: queue behind it on the log. The next
		// fdatasync of l covers us and every caller queued meanwhile, and it
		// adds no parallel sync (one log is synced by one caller at a time),
		// so it needs no token.
		return c.syncFollow(l)
	}
	select {
	case c.direct <- struct{}{}:
		return c.syncDirect(l)
	default:
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.dirty[l] = struct{}{}
	p := c.next
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
	<-p.done
	return p.errs[l]
}

// syncDirect syncs l in the caller's goroutine, holding one direct token.
// Close waits for the tokens, so no direct sync outlives the Committer.
func (c *Committer) syncDirect(l *Log) error {
	defer func() { <-c.direct }()
	return c.syncFollow(l)
}

// syncFollow syncs l in the caller's goroutine (sharing a sync of l that is
// already queued or running when it can) and records how long it took.
func (c *Committer) syncFollow(l *Log) error {
	start := time.Now()
	err := l.Sync()
	c.recordLatency(time.Since(start).Microseconds())
	if errors.Is(err, ErrClosed) { // Close synced it
		return nil
	}
	return err
}

func (c *Committer) loop() {
	defer close(c.stopped)
	var tick <-chan time.Time
	if c.policy == SyncInterval {
		t := time.NewTicker(c.interval)
		defer t.Stop()
		tick = t.C
	}
	gather := time.NewTimer(time.Hour)
	gather.Stop()
	lastBatch, lastDur := 0, time.Duration(0)
	for {
		select {
		case <-c.kick:
			if c.policy == SyncAlways {
				c.gather(gather, lastBatch, lastDur)
			}
		case <-tick:
		}
		n, d, last := c.runPass()
		if n > 0 {
			// Everyone the pass releases plus everyone who queued meanwhile
			// may be back for the next one.
			c.mu.Lock()
			lastBatch, lastDur = n+len(c.dirty), d
			c.mu.Unlock()
		}
		if last {
			return
		}
	}
}

// gather delays a SyncAlways pass until as many logs wait as the previous
// pass released plus those queued during it, for at most a quarter of that pass's duration (≤ 1 ms).
// Appenders released together come back a few µs apart; without this the
// first one's kick starts a pass and the rest wait a whole pass for the next,
// splitting them into two half-full passes. A lone appender never waits
// (lastBatch 1).
func (c *Committer) gather(t *time.Timer, lastBatch int, lastDur time.Duration) {
	deadline := time.Now().Add(min(lastDur/4, time.Millisecond))
	for {
		c.mu.Lock()
		n, closed := len(c.dirty), c.closed
		c.mu.Unlock()
		wait := time.Until(deadline)
		if n >= lastBatch || closed || wait <= 0 {
			return
		}
		t.Reset(wait)
		select {
		case <-c.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// runPass syncs the logs marked dirty so far and returns how many and how
// long it took; last reports that the committer is closed (that pass was the
// final one).
func (c *Committer) runPass() (n int, d time.Duration, last bool) {
	c.mu.Lock()
	p, logs, closed := c.next, c.dirty, c.closed
	c.next, c.dirty = newPass(), make(map[*Log]struct{}, len(logs))
	c.mu.Unlock()

	if len(logs) > 0 {
		start := time.Now()
		c.syncAll(p, logs)
		d = time.Since(start)
		c.recordLatency(d.Microseconds())
	}
	close(p.done)
	return len(logs), d, closed
}

func (c *Committer) syncAll(p *pass, logs map[*Log]struct{}) {
	var mu sync.Mutex
	record := func(l *Log, err error) {
		if err == nil || errors.Is(err, ErrClosed) { // Close synced it
			return
		}
		mu.Lock()
		if p.errs == nil {
			p.errs = map[*Log]error{}
		}
		p.errs[l] = err
		mu.Unlock()
	}
	if len(logs) == 1 {
		for l := range logs {
			record(l, l.Sync())
		}
		return
	}
	type fsKey struct {
		fs  fileSystem
		dev uint64
	}
	groups := map[fsKey][]*Log{}
	for l := range logs {
		k := fsKey{l.fs, l.dev}
		groups[k] = append(groups[k], l)
	}
	useSyncFS := c.syncFS.Load()
	work := make(chan *Log, len(logs))
	for k, g := range groups {
		if !useSyncFS || len(g) < syncFSMin {
			for _, l := range g {
				work <- l
			}
			continue
		}
		points := make([]syncPoint, len(g))
		for i, l := range g {
			points[i] = l.syncPointNow()
		}
		err := k.fs.SyncFS(g[0].dir)
		for i, l := range g {
			if l.closed.Load() {
				continue // as Sync's ErrClosed: Close synced it
			}
			if ferr := l.failed(); ferr != nil {
				// Sticky (ErrSyncFailed): a later syncfs proves nothing
				// about the pages an earlier failure may have dropped.
				record(l, ferr)
				continue
			}
			if err != nil {
				l.syncMu.Lock()
				ferr := l.failSyncLocked(fmt.Errorf("segment log %s: syncfs: %w", l.dir, err))
				l.syncMu.Unlock()
				record(l, ferr)
				continue
			}
			l.markSynced(points[i])
		}
	}
	close(work)
	var wg sync.WaitGroup
	for range passWorkers(c.workers, len(logs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range work {
				record(l, l.Sync())
			}
		}()
	}
	wg.Wait()
}

// SetSyncFS makes every later pass sync the logs of one file system with
// one syncfs(2) once syncFSMin or more of them are dirty (on true), instead
// of an fdatasync of each through its own descriptor (the default).
//
// Only for file systems whose syncfs is known to write back and commit
// everything (vfs.SyncFSTrusted): syncfs reaches a file system only through
// its sync_fs method, and without one (FUSE, some network file systems) it
// returns 0 having synced nothing (issue 21). Safe for concurrent use.
func (c *Committer) SetSyncFS(on bool) { c.syncFS.Store(on) }

// OnSync makes the committer call fn with the duration (µs) of every sync it
// times (those SyncLatencies would return), instead of keeping them for
// SyncLatencies: a caller that counts them all (a histogram) loses none. fn
// must be quick and safe for concurrent use.
func (c *Committer) OnSync(fn func(micros int64)) { c.onSync.Store(&fn) }

func (c *Committer) recordLatency(us int64) {
	if fn := c.onSync.Load(); fn != nil {
		(*fn)(us)
		return
	}
	c.latMu.Lock()
	if len(c.lat) < maxLatencies {
		c.lat = append(c.lat, us)
	}
	c.latMu.Unlock()
}

// SyncLatencies returns the durations (µs) of the syncs that ran since the
// previous call: shared passes and the SyncAlways Commits that synced their
// own log (including time queued behind a sync of that log in flight). At
// most the first 4096; passes with nothing to sync are not counted. It
// forgets them.
func (c *Committer) SyncLatencies() []int64 {
	c.latMu.Lock()
	defer c.latMu.Unlock()
	out := c.lat
	c.lat = nil
	return out
}

// Close runs a final pass over the dirty logs, stops the background
// goroutine and makes later Commits return ErrClosed. Logs must be closed
// after their Committer, or their own Close syncs them.
func (c *Committer) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.closed = true
	c.closedA.Store(true)
	p := c.next
	c.mu.Unlock()
	if c.policy == SyncNever {
		return nil
	}
	select {
	case c.kick <- struct{}{}:
	default:
	}
	<-c.stopped
	for range directSyncs { // direct syncs in flight finish first
		c.direct <- struct{}{}
	}
	var err error
	for _, e := range p.errs {
		err = errors.Join(err, e)
	}
	return err
}
