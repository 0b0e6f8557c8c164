//go:build crash

package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// The streams workload (issue 12): beside the main traffic, a pusher fills a source queue and
// consumers run the streams SDKs' loop on it: pop a span of one partition, read the
// partition's state, commit one cycle that upserts a counter, pushes one sink message naming
// the span and acks the span's last message. After every kill the harness checks that each
// cycle was all-or-nothing:
//
//   - per source partition, the sink messages form one chain: each one's `from` is the
//     previous one's `to` (starting at 0), so no cycle left its sink push without its state
//     or its state without its sink push;
//   - the state equals the fold of exactly those cycles: n is the last sink message's `to`
//     and last its span's last transactionId (0 and absent when the sink holds none);
//   - no source message is in two sink spans (a cycle whose ack was lost but whose sink push
//     or state stayed would be redelivered and folded twice);
//   - every cycle answered success:true is in the sink (an acknowledged cycle is durable);
//   - at the end, once the consumers have drained the source, every stored source message is
//     in exactly one sink span (an ack that committed without its cycle would skip one).

const (
	streamsSource = "crash-src"
	streamsSink   = "crash-sink"
	streamsGroup  = "streams"
	streamsQuery  = "crash-streams"
	streamsKey    = "count"
)

var streamsPartitions = []string{"s0", "s1", "s2", "s3"}

// streamsLedger is what the streams side was promised. Safe for concurrent use.
type streamsLedger struct {
	led *ledger // violations go to the main ledger

	mu       sync.Mutex
	pidOf    map[string]string // source partition name → id, learnt from pops
	answered map[string]bool   // sink transactionIds of cycles answered success:true
	sourceN  int               // source pushes sent

	cycles, failedCycles, lostCycles, folded atomic.Int64
}

func newStreamsLedger(led *ledger) *streamsLedger {
	return &streamsLedger{led: led, pidOf: map[string]string{}, answered: map[string]bool{}}
}

// sinkSpan is the payload of a cycle's sink message.
type sinkSpan struct {
	P    string   `json:"p"`
	PID  string   `json:"pid"`
	From int      `json:"from"`
	To   int      `json:"to"`
	Txs  []string `json:"txs"`
}

// counter is the state value a cycle upserts.
type counter struct {
	N    int    `json:"n"`
	Last string `json:"last"`
}

// registerStreams registers the query (idempotent: the same name and hash every epoch).
func registerStreams(ctx context.Context, a *api) (string, error) {
	st, b, err := a.do(ctx, http.MethodPost, "/streams/v1/queries", map[string]any{
		"name": streamsQuery, "source_queue": streamsSource, "sink_queue": streamsSink, "config_hash": "v1"})
	if err != nil {
		return "", err
	}
	var res struct {
		QueryID string `json:"query_id"`
	}
	if st != http.StatusOK || json.Unmarshal(b, &res) != nil || res.QueryID == "" {
		return "", fmt.Errorf("register answered %d %s", st, trunc(b))
	}
	return res.QueryID, nil
}

// streamState reads the counter of one partition's shard; ok=false when it has none.
func streamState(ctx context.Context, a *api, qid, pid string) (c counter, ok bool, st int, err error) {
	st, b, err := a.do(ctx, http.MethodPost, "/streams/v1/state/get", map[string]any{
		"query_id": qid, "partition_id": pid, "keys": []string{streamsKey}})
	if err != nil || st != http.StatusOK {
		return c, false, st, err
	}
	var res struct {
		Success bool `json:"success"`
		Rows    []struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(b, &res); err != nil || !res.Success {
		return c, false, st, fmt.Errorf("state/get answer %s: %v", trunc(b), err)
	}
	for _, r := range res.Rows {
		if r.Key == streamsKey {
			if err := json.Unmarshal(r.Value, &c); err != nil {
				return c, false, st, fmt.Errorf("state value %s: %w", r.Value, err)
			}
			return c, true, st, nil
		}
	}
	return c, false, st, nil
}

// streamsWork is one epoch's streams traffic.
type streamsWork struct {
	api   *api
	sl    *streamsLedger
	qid   string
	epoch int
	seed  uint64
	// lastWork is when a consumer last popped something (Unix ns): the final drain waits for
	// the consumers to go idle.
	lastWork atomic.Int64
}

// run starts one source pusher (unless push is false) and consumers; stop waits for them.
func (s *streamsWork) run(consumers int, push bool) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if push {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.pusher(ctx, rand.New(rand.NewPCG(s.seed, uint64(s.epoch*1000+900))))
		}()
	}
	for i := 0; i < consumers; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			s.consumer(ctx, id, rand.New(rand.NewPCG(s.seed, uint64(s.epoch*1000+950+id))))
		}(i)
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// pusher fills the source queue. A push whose answer is lost is not re-sent: whatever was
// stored is what the final check expects to see folded.
func (s *streamsWork) pusher(ctx context.Context, rng *rand.Rand) {
	for k := 0; ctx.Err() == nil; k++ {
		part := streamsPartitions[rng.IntN(len(streamsPartitions))]
		items := make([]pushItem, 1+rng.IntN(5))
		for i := range items {
			tx := fmt.Sprintf("s%d-%d-%d", s.epoch, k, i)
			items[i] = pushItem{Queue: streamsSource, Partition: part, TransactionID: tx, Payload: json.RawMessage(`{"tx":"` + tx + `"}`)}
		}
		st, _, err := s.api.push(ctx, items)
		if err == nil && st != http.StatusCreated && st < 500 {
			s.sl.led.violate("streams source push answered %d", st)
		}
		s.sl.mu.Lock()
		s.sl.sourceN++
		s.sl.mu.Unlock()
		backoff(ctx, 3*time.Millisecond)
	}
}

// consumer is the SDKs' loop: pop one partition's span, read its state, commit one cycle.
func (s *streamsWork) consumer(ctx context.Context, id int, rng *rand.Rand) {
	for seq := 0; ctx.Err() == nil; seq++ {
		q := url.Values{}
		q.Set("batch", strconv.Itoa(1+rng.IntN(8)))
		q.Set("partitions", "1")
		q.Set("consumerGroup", streamsGroup)
		q.Set("wait", "true")
		q.Set("timeout", "300")
		q.Set("leaseSeconds", "2")
		st, ans, err := s.api.pop(ctx, streamsSource, q)
		if err != nil || st != http.StatusOK {
			if err == nil && st != http.StatusNoContent && st < 500 {
				s.sl.led.violate("streams pop answered %d", st)
			}
			if err != nil || st != http.StatusNoContent {
				backoff(ctx, 5*time.Millisecond)
			}
			continue
		}
		s.lastWork.Store(time.Now().UnixNano())
		msgs := ans.Messages
		pid, pname := msgs[0].PartitionID, msgs[0].Partition
		txs := make([]string, len(msgs))
		for i, m := range msgs {
			if m.PartitionID != pid {
				s.sl.led.violate("streams pop with partitions=1 delivered two partitions (%s, %s)", pid, m.PartitionID)
			}
			txs[i] = m.TransactionID
		}
		s.sl.mu.Lock()
		s.sl.pidOf[pname] = pid
		s.sl.mu.Unlock()

		cur, _, st, err := streamState(ctx, s.api, s.qid, pid)
		if err != nil || st != http.StatusOK {
			if err == nil && st < 500 {
				s.sl.led.violate("streams state/get answered %d", st)
			}
			continue
		}
		last := txs[len(txs)-1]
		sinkTx := fmt.Sprintf("c%d-%d-%d", s.epoch, id, seq) // unique per attempt: dedup must not hide a double fold
		span := sinkSpan{P: pname, PID: pid, From: cur.N, To: cur.N + len(txs), Txs: txs}
		payload, _ := json.Marshal(span)
		st, b, err := s.api.do(ctx, http.MethodPost, "/streams/v1/cycle", map[string]any{
			"query_id": s.qid, "partition_id": pid, "consumer_group": streamsGroup,
			"state_ops":  []map[string]any{{"type": "upsert", "key": streamsKey, "value": counter{N: span.To, Last: last}}},
			"push_items": []map[string]any{{"queue": streamsSink, "partition": pname, "transactionId": sinkTx, "payload": json.RawMessage(payload)}},
			"ack":        map[string]any{"transactionId": last, "leaseId": ans.LeaseID, "status": "completed", "count": len(txs)},
		})
		switch {
		case err != nil || st >= 500:
			s.sl.lostCycles.Add(1) // no answer (killed): committed or not, the checks will tell
			continue
		case st != http.StatusOK:
			s.sl.led.violate("streams cycle answered %d: %s", st, trunc(b))
			continue
		}
		var res struct {
			Success bool   `json:"success"`
			Error   string `json:"error"`
		}
		if err := json.Unmarshal(b, &res); err != nil {
			s.sl.led.violate("streams cycle answer %s: %v", trunc(b), err)
			continue
		}
		if !res.Success {
			s.sl.failedCycles.Add(1) // an expired lease: nothing applied, the span comes back
			continue
		}
		s.sl.cycles.Add(1)
		s.sl.folded.Add(int64(len(txs)))
		s.sl.mu.Lock()
		s.sl.answered[sinkTx] = true
		s.sl.mu.Unlock()
	}
}

// drainStreams runs consumers (no pusher) until they have found nothing for idle, so every
// stored source message has been folded by a committed cycle.
func (s *streamsWork) drainStreams(consumers int, idle, limit time.Duration) error {
	s.lastWork.Store(time.Now().UnixNano())
	stop := s.run(consumers, false)
	defer stop()
	deadline := time.Now().Add(limit)
	for time.Since(time.Unix(0, s.lastWork.Load())) < idle {
		if time.Now().After(deadline) {
			return fmt.Errorf("the streams consumers were still busy after %v", limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// verifyStreams checks the all-or-nothing promises on a restarted server (see the top of the
// file); final adds the coverage check of every stored source message. It returns the sink
// messages read.
func verifyStreams(ctx context.Context, a *api, sl *streamsLedger, qid string, epoch int, final bool) (int, error) {
	group := fmt.Sprintf("sverify-%d", epoch)
	sink, err := drainQueue(ctx, a, streamsSink, group, time.Time{})
	if err != nil {
		return 0, fmt.Errorf("drain sink: %w", err)
	}
	_, _, _ = a.do(ctx, http.MethodDelete, "/api/v1/consumer-groups/"+url.PathEscape(group)+"?deleteMetadata=true", nil)

	byPart := map[string][]sinkSpan{}
	lastTx := map[string]string{}
	foldedBy := map[string]string{} // source tx → sink tx
	inSink := map[string]bool{}
	for _, m := range sink {
		inSink[m.TransactionID] = true
		var sp sinkSpan
		if err := json.Unmarshal(m.Data, &sp); err != nil || len(sp.Txs) == 0 {
			sl.led.violate("after kill %d: sink message %s has payload %s", epoch, m.TransactionID, trunc(m.Data))
			continue
		}
		prev := 0
		if spans := byPart[sp.P]; len(spans) > 0 {
			prev = spans[len(spans)-1].To
		}
		if sp.From != prev || sp.To != sp.From+len(sp.Txs) {
			sl.led.violate("after kill %d: partition %s: sink span %s is [%d,%d) after %d: a cycle's state and sink push disagree",
				epoch, sp.P, m.TransactionID, sp.From, sp.To, prev)
		}
		for _, tx := range sp.Txs {
			if other, dup := foldedBy[tx]; dup {
				sl.led.violate("after kill %d: source message %s folded twice (sink %s and %s)", epoch, tx, other, m.TransactionID)
			}
			foldedBy[tx] = m.TransactionID
		}
		byPart[sp.P] = append(byPart[sp.P], sp)
		lastTx[sp.P] = sp.Txs[len(sp.Txs)-1]
	}

	sl.mu.Lock()
	for tx := range sl.answered {
		if !inSink[tx] {
			sl.led.violate("after kill %d: cycle %s was answered success:true but its sink push is gone", epoch, tx)
		}
	}
	pids := map[string]string{}
	for p, id := range sl.pidOf {
		pids[p] = id
	}
	sl.mu.Unlock()
	for p, spans := range byPart {
		pids[p] = spans[0].PID
	}
	for p, pid := range pids {
		c, ok, st, err := streamState(ctx, a, qid, pid)
		if err != nil || st != http.StatusOK {
			return 0, fmt.Errorf("state/get of %s: %d %v", p, st, err)
		}
		spans := byPart[p]
		switch {
		case len(spans) == 0 && ok && c.N != 0:
			sl.led.violate("after kill %d: partition %s: state n=%d but the sink holds no cycle", epoch, p, c.N)
		case len(spans) > 0 && (!ok || c.N != spans[len(spans)-1].To || c.Last != lastTx[p]):
			sl.led.violate("after kill %d: partition %s: state %+v (present %v) is not the fold of the %d sink cycles (n=%d, last %s)",
				epoch, p, c, ok, len(spans), spans[len(spans)-1].To, lastTx[p])
		}
	}

	if final {
		src, err := drainQueue(ctx, a, streamsSource, "sverify-src", time.Time{})
		if err != nil {
			return 0, fmt.Errorf("drain source: %w", err)
		}
		for _, m := range src {
			if _, ok := foldedBy[m.TransactionID]; !ok {
				sl.led.violate("at the end: source message %s (partition %s) is in no sink span: acked without its cycle?", m.TransactionID, m.Partition)
			}
		}
		if len(foldedBy) != len(src) {
			sl.led.violate("at the end: %d source messages stored, %d folded", len(src), len(foldedBy))
		}
	}
	return len(sink), nil
}
