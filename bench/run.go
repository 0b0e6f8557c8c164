package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// NewDriver builds the driver cfg.Driver names, sized for conns concurrent workers: comb's
// own (any Queen v1 HTTP server), or a peer's that RegisterDriver added.
//
// Errors: ErrConfig for an unknown driver, or a peer's driver this binary was built without
// (the server binary links no benchmark peer: `make comb-bench`, package bench/peers).
func NewDriver(cfg Config, conns int) (Driver, error) {
	if cfg.Driver == DriverComb {
		d, err := NewHTTPDriver(cfg.URL, conns, nil)
		if err == nil {
			d.authorization = bearerHeader(cfg.Token)
		}
		return d, err
	}
	peersMu.RLock()
	newPeer := peers[cfg.Driver]
	peersMu.RUnlock()
	switch {
	case newPeer != nil:
		return newPeer(cfg, conns)
	case cfg.Driver == DriverRedis || cfg.Driver == DriverNATS:
		return nil, fmt.Errorf("driver %q is not in this binary: use bin/comb-bench (make comb-bench, built with -tags peers): %w", cfg.Driver, ErrConfig)
	default:
		return nil, fmt.Errorf("driver %q: %w", cfg.Driver, ErrConfig)
	}
}

// PeerDriver builds a peer's driver for cfg, sized for conns concurrent workers.
type PeerDriver func(cfg Config, conns int) (Driver, error)

var (
	peersMu sync.RWMutex
	peers   = map[string]PeerDriver{}
)

// RegisterDriver makes NewDriver build name's driver with newDriver (package bench/peers
// registers redis and nats). Safe for concurrent use; a later registration of a name wins.
func RegisterDriver(name string, newDriver PeerDriver) {
	peersMu.Lock()
	peers[name] = newDriver
	peersMu.Unlock()
}

// Workers is how many concurrent workers (and so connections) a normalized cfg runs.
func Workers(cfg Config) int {
	switch cfg.Workload {
	case WorkloadE2E, WorkloadLongPoll:
		return cfg.Producers + cfg.Concurrency
	case WorkloadFanout:
		return cfg.Producers + cfg.Groups*consumersPerGroup(cfg)
	default:
		return cfg.Concurrency
	}
}

func consumersPerGroup(cfg Config) int {
	if n := cfg.Concurrency / max(cfg.Groups, 1); n > 1 {
		return n
	}
	return 1
}

// role is a set of identical workers.
type role struct {
	n   int
	run func(ctx context.Context, i int, w Worker, ws *WorkerStats)
}

// Run executes a normalized cfg against drv and returns its report. Progress lines go to
// progress when it is not nil. Cancelling ctx ends the run early (the report covers what ran).
func Run(ctx context.Context, cfg Config, drv Driver, progress io.Writer) (*Result, error) {
	st := NewStats()
	topo := Topology{RunID: cfg.RunID, Queues: cfg.Queues, Partitions: cfg.Partitions, Groups: cfg.groupNames(),
		RetentionSeconds: cfg.RetentionSeconds}
	if err := drv.Setup(ctx, topo); err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	dests := allDests(cfg.Queues, cfg.Partitions)
	var commit *CommitSpec
	if cfg.Workload == WorkloadCycle || cfg.Workload == WorkloadTransaction {
		var err error
		if commit, err = commitSpec(ctx, cfg, drv); err != nil {
			return nil, err
		}
		// The commits read queue 0 only (one stream query, one source queue).
		dests = allDests(1, cfg.Partitions)
	}

	// Untimed preparation: the consume backlog, or one message per long-poll queue so every
	// queue exists before consumers park on it.
	target := int64(0)
	switch cfg.Workload {
	case WorkloadConsume, WorkloadCycle, WorkloadTransaction:
		if progress != nil {
			fmt.Fprintf(progress, "prefilling %d messages...\n", cfg.Prefill)
		}
		if err := prefill(ctx, drv, st, cfg, dests, cfg.Prefill, cfg.Batch); err != nil {
			return nil, err
		}
		target = st.pushed.Load()
	case WorkloadLongPoll:
		if err := prefill(ctx, drv, st, cfg, dests, len(dests), 1); err != nil {
			return nil, err
		}
	}

	serverPID := cfg.ServerPID
	if serverPID == 0 {
		serverPID = discoverServer(cfg)
	}
	metricsURL := ""
	if drv.Name() == DriverComb {
		metricsURL = drv.Target()
	}
	pr := newProbe(cfg, serverPID, metricsURL)
	var c0 Counters
	var intervals <-chan []Interval
	ivCtx, stopIntervals := context.WithCancel(ctx)
	defer stopIntervals()
	openWindow := func() {
		pr.open(ctx)
		c0 = st.Snapshot()
		st.measuring.Store(true)
		if cfg.Interval > 0 {
			intervals = sampleIntervals(ivCtx, cfg.Interval, serverPID, func() (int64, int64) {
				if cfg.Workload == WorkloadPush {
					return st.winPushed.Load(), st.winRequests.Load()
				}
				return st.winConsumed.Load(), st.winRequests.Load()
			})
		}
	}
	if cfg.Warmup == 0 {
		openWindow() // before the first worker starts, so nothing escapes the window
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	roles := rolesFor(cfg, dests, commit)
	var wg sync.WaitGroup
	var startErr atomic.Value
	id := 0
	for _, r := range roles {
		for i := 0; i < r.n; i++ {
			w, err := drv.NewWorker(id)
			id++
			if err != nil {
				startErr.Store(err)
				cancel()
				break
			}
			wg.Add(1)
			go func(i int, w Worker, r role) {
				defer wg.Done()
				ws := st.Worker()
				defer ws.Flush()
				defer w.Close()
				r.run(runCtx, i, w, ws)
			}(i, w, r)
		}
	}
	if err, _ := startErr.Load().(error); err != nil {
		wg.Wait()
		return nil, fmt.Errorf("start workers: %w", err)
	}

	stopProgress := startProgress(progress, st, cfg.Workload)
	if cfg.Warmup > 0 {
		waitCtx(runCtx, cfg.Warmup)
		openWindow()
	}
	drained := waitWindow(runCtx, cfg.Duration, func() bool {
		return target > 0 && st.consumed.Load() >= target
	})
	st.measuring.Store(false)
	c1 := st.Snapshot()
	res := &Result{Requests: st.winRequests.Load()}
	stopIntervals()
	if intervals != nil {
		res.Intervals = <-intervals
		res.HoldRate, res.HoldCPU = holdRatios(res.Intervals)
	}
	pr.close(ctx, res, res.Requests)
	stopProgress()
	cancel()
	wg.Wait()

	end := c1.At
	if drained {
		if last := time.Unix(0, st.lastMsgNs.Load()); last.After(c0.At) && last.Before(end) {
			end = last
		}
	}
	window := end.Sub(c0.At)
	res.Workload, res.Driver, res.Target = cfg.Workload, drv.Name(), drv.Target()
	res.Queues, res.Partitions, res.Batch, res.Size = cfg.Queues, cfg.Partitions, cfg.Batch, cfg.Size
	res.Concurrency, res.Groups, res.TargetRate = cfg.Concurrency, cfg.Groups, cfg.Rate
	res.WindowSec, res.Drained = window.Seconds(), drained
	res.RequestLatencyMs = map[string]Percentiles{}
	res.Errors = st.Errors()
	res.Date = time.Now().UTC().Format("2006-01-02")
	if cfg.Workload != WorkloadPush && cfg.Workload != WorkloadConsume {
		res.Producers = cfg.Producers
	}
	res.ErrorsTotal = st.ErrorTotal()
	res.PushMsgPerSec = Rate(st.winPushed.Load(), window)
	if cfg.Workload == WorkloadPush {
		res.Messages = st.winPushed.Load()
	} else {
		res.Messages = st.winConsumed.Load()
	}
	res.MsgPerSec = Rate(res.Messages, window)
	res.MBPerSec = res.MsgPerSec * float64(cfg.Size) / 1e6
	for _, name := range st.HistNames() {
		p := PercentilesOf(st.Hist(name))
		if name == "e2e" {
			res.E2ELatencyMs = &p
			continue
		}
		if g, ok := strings.CutPrefix(name, groupE2EPrefix); ok {
			if res.GroupE2ELatencyMs == nil {
				res.GroupE2ELatencyMs = map[string]Percentiles{}
			}
			res.GroupE2ELatencyMs[g] = p
			res.WorstGroupE2EP99Ms = max(res.WorstGroupE2EP99Ms, p.P99)
			continue
		}
		res.RequestLatencyMs[name] = p
	}
	main := string(OpPop)
	switch cfg.Workload {
	case WorkloadPush:
		main = string(OpPush)
	case WorkloadCycle:
		main = string(OpCycle)
	case WorkloadTransaction:
		main = string(OpTransaction)
	}
	res.LatencyMs = res.RequestLatencyMs[main]
	if commit != nil {
		res.CommitsPerSec = Rate(res.LatencyMs.Count, window)
		if cfg.Workload == WorkloadCycle {
			res.StateOps = cfg.StateOps
		}
	}
	return res, nil
}

// rolesFor lays out the workers of each workload.
func rolesFor(cfg Config, dests []Dest, commit *CommitSpec) []role {
	var tl *Timeline
	if cfg.Rate > 0 {
		tl = NewTimeline(time.Now(), cfg.Rate, pushBatch(cfg))
	}
	pushers := func(n int) role {
		return role{n: n, run: func(ctx context.Context, i int, w Worker, ws *WorkerStats) {
			pushLoop(ctx, w, ws, pushSpec{dests: dests, offset: i * max(len(dests)/n, 1), batch: pushBatch(cfg), size: cfg.Size, timeline: tl})
		}}
	}
	consumers := func(n int, group string, wait time.Duration, label string) role {
		srcs := consumerSources(n, cfg.Queues, cfg.Partitions,
			Source{Group: group, Max: cfg.Batch, Wait: wait, WantTimes: cfg.needsTimes(), GroupLabel: label})
		return role{n: n, run: func(ctx context.Context, i int, w Worker, ws *WorkerStats) {
			consumeLoop(ctx, w, ws, srcs[i])
		}}
	}
	wait := time.Duration(cfg.WaitMs) * time.Millisecond
	switch cfg.Workload {
	case WorkloadPush:
		return []role{pushers(cfg.Concurrency)}
	case WorkloadConsume:
		return []role{consumers(cfg.Concurrency, cfg.groupName(0), 0, "")}
	case WorkloadCycle, WorkloadTransaction:
		src := Source{Queue: 0, Group: cfg.groupName(0), Max: cfg.Batch}
		return []role{{n: cfg.Concurrency, run: func(ctx context.Context, i int, w Worker, ws *WorkerStats) {
			commitLoop(ctx, w, ws, src, commit)
		}}}
	case WorkloadE2E, WorkloadLongPoll:
		return []role{consumers(cfg.Concurrency, cfg.groupName(0), wait, ""), pushers(cfg.Producers)}
	case WorkloadFanout:
		roles := []role{}
		for g := 0; g < cfg.Groups; g++ {
			roles = append(roles, consumers(consumersPerGroup(cfg), cfg.groupName(g), wait, "g"+strconv.Itoa(g)))
		}
		return append(roles, pushers(cfg.Producers))
	}
	return nil
}

// pushBatch is the push request size: long-poll wakes are measured one message at a time.
func pushBatch(cfg Config) int {
	if cfg.Workload == WorkloadLongPoll {
		return 1
	}
	return cfg.Batch
}

// prefill pushes total messages (untimed) with cfg.Concurrency pushers.
func prefill(ctx context.Context, drv Driver, st *Stats, cfg Config, dests []Dest, total, batch int) error {
	var remaining atomic.Int64
	remaining.Store(int64(total))
	n := min(cfg.Concurrency, max(total/batch, 1))
	var wg sync.WaitGroup
	before := st.ErrorTotal()
	for i := 0; i < n; i++ {
		w, err := drv.NewWorker(1_000_000 + i)
		if err != nil {
			wg.Wait()
			return fmt.Errorf("prefill: %w", err)
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer w.Close()
			ws := st.Worker()
			pushLoop(ctx, w, ws, pushSpec{dests: dests, offset: i * max(len(dests)/n, 1), batch: batch, size: cfg.Size, remaining: &remaining})
		}(i)
	}
	wg.Wait()
	if ctx.Err() != nil {
		return fmt.Errorf("prefill: %w", ctx.Err())
	}
	if errs := st.ErrorTotal() - before; errs > 0 && st.pushed.Load() == 0 {
		return fmt.Errorf("prefill: every push failed (%v)", st.Errors())
	}
	return nil
}

// waitCtx sleeps d unless ctx ends first.
func waitCtx(ctx context.Context, d time.Duration) {
	if d > 0 {
		waitUntil(ctx, time.Now().Add(d))
	}
}

// waitWindow waits for d, for ctx, or for done() to turn true (checked every 10 ms); it
// reports whether done() ended the window.
func waitWindow(ctx context.Context, d time.Duration, done func() bool) bool {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if done() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// discoverServer finds the local process behind the driver's address; 0 when the address is
// not loopback or nothing is found.
func discoverServer(cfg Config) int {
	var hostport string
	switch cfg.Driver {
	case DriverComb, DriverNATS:
		raw := cfg.URL
		if cfg.Driver == DriverNATS {
			raw = cfg.NATSURL
		}
		u, err := url.Parse(raw)
		if err != nil {
			return 0
		}
		hostport = u.Host
	case DriverRedis:
		hostport = cfg.RedisAddr
	}
	host, portStr, err := net.SplitHostPort(hostport)
	if err != nil || !IsLoopback(host) {
		return 0
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return 0
	}
	pid, err := FindListenerPID(port)
	if err != nil {
		return 0
	}
	return pid
}
