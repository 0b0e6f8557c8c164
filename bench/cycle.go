package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// The cycle and transaction workloads (issue 12): a consumer pops a batch from the source
// queue and commits it with one request, either a streams cycle (spec 10: --state-ops state
// upserts, one sink push, the source ack) or its baseline, a plain /api/v1/transaction of the
// same push and ack. Both ack the batch's last message, which commits the whole batch (spec
// 4.6), as the streams runtimes do. The sink push goes to the source message's partition name
// on one sink queue, so a run over 10,000 partitions also writes 10,000 sink partitions.

// Op names of the commit requests.
const (
	OpCycle       Op = "cycle"
	OpTransaction Op = "transaction"
)

// CommitSpec is what every commit of a run shares.
type CommitSpec struct {
	Via      Workload // WorkloadCycle or WorkloadTransaction
	QueryID  string   // cycle: the registered query
	Sink     string   // sink queue
	Group    string   // "" = queue mode
	StateOps int      // cycle: upserts per cycle
	Payload  []byte   // of the sink push
}

// Committer is a Worker that can commit a popped batch with one cycle or transaction; only the
// HTTP driver is one.
type Committer interface {
	// Commit sends the batch's commit and reports whether the server applied it (a cycle or
	// transaction answered success:false is applied=false, err nil).
	Commit(ctx context.Context, b Batch, s *CommitSpec) (applied bool, err error)
}

// StreamRegistrar registers the run's stream query (POST /streams/v1/queries).
type StreamRegistrar interface {
	RegisterStream(ctx context.Context, name, source, sink string) (queryID string, err error)
}

// SinkQueueName is the sink queue of run runID's cycle and transaction workloads.
func SinkQueueName(runID string) string { return "bench-" + runID + "-sink" }

// commitSpec prepares a cycle or transaction run: the query registration for cycles. Streams
// runs read one source queue (queue 0); --queues above 1 only spreads the backlog.
func commitSpec(ctx context.Context, cfg Config, drv Driver) (*CommitSpec, error) {
	s := &CommitSpec{Via: cfg.Workload, Sink: SinkQueueName(cfg.RunID), Group: cfg.groupName(0),
		StateOps: cfg.StateOps, Payload: NewPayload(cfg.Size).Bytes()}
	if cfg.Workload != WorkloadCycle {
		return s, nil
	}
	reg, ok := drv.(StreamRegistrar)
	if !ok {
		return nil, fmt.Errorf("driver %s cannot register a stream query: %w", drv.Name(), ErrConfig)
	}
	id, err := reg.RegisterStream(ctx, "bench-"+cfg.RunID, QueueName(cfg.RunID, 0), s.Sink)
	if err != nil {
		return nil, fmt.Errorf("register stream query: %w", err)
	}
	s.QueryID = id
	return s, nil
}

// commitLoop pops and commits until ctx ends. The commit's latency is the cycle's (or the
// transaction's) request alone; a commit the server did not apply counts as a failed item and
// its messages come back after the lease expires.
func commitLoop(ctx context.Context, w Worker, ws *WorkerStats, src Source, spec *CommitSpec) {
	c, ok := w.(Committer)
	if !ok {
		ws.Error(fmt.Errorf("worker cannot commit cycles: %w", ErrConfig))
		return
	}
	op := OpCycle
	if spec.Via == WorkloadTransaction {
		op = OpTransaction
	}
	for ctx.Err() == nil {
		b, recv, ok := popBatch(ctx, w, ws, src)
		if !ok {
			continue
		}
		n := b.Len()
		applied, err := c.Commit(ctx, b, spec)
		end := time.Now()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			ws.Error(err)
			waitUntil(ctx, end.Add(errorBackoff))
			continue
		}
		ws.Request(op, end.Sub(recv))
		if !applied {
			ws.FailedItems(op, 1)
			continue
		}
		ws.Consumed(n)
	}
}

// RegisterStream sends POST /streams/v1/queries with reset:true (a rerun of the same run id
// starts from empty state) and returns the query_id.
func (d *HTTPDriver) RegisterStream(ctx context.Context, name, source, sink string) (string, error) {
	w, err := d.NewWorker(-1)
	if err != nil {
		return "", err
	}
	defer w.Close()
	hw := w.(*httpWorker)
	hw.body = append(hw.body[:0], `{"name":`...)
	hw.body = appendJSONString(hw.body, name)
	hw.body = append(hw.body, `,"source_queue":`...)
	hw.body = appendJSONString(hw.body, source)
	hw.body = append(hw.body, `,"sink_queue":`...)
	hw.body = appendJSONString(hw.body, sink)
	hw.body = append(hw.body, `,"config_hash":"bench","reset":true}`...)
	if err := hw.do(OpCycle, fasthttp.MethodPost, []byte("/streams/v1/queries"), hw.body, RequestTimeout); err != nil {
		return "", err
	}
	if hw.resp.StatusCode() != fasthttp.StatusOK {
		return "", hw.statusErr(OpCycle)
	}
	v, err := hw.parser.ParseBytes(hw.resp.Body())
	if err != nil {
		return "", fmt.Errorf("register answer: %v: %w", err, ErrBadResponse)
	}
	id := string(v.GetStringBytes("query_id"))
	if id == "" {
		return "", fmt.Errorf("register answer has no query_id: %w", ErrBadResponse)
	}
	return id, nil
}

// Commit sends the batch's cycle or transaction; both answer 200 with a top-level success.
func (w *httpWorker) Commit(_ context.Context, b Batch, s *CommitSpec) (bool, error) {
	pb, ok := b.(*PoppedBatch)
	if !ok || pb.Len() == 0 {
		return true, nil
	}
	op, path := OpCycle, "/streams/v1/cycle"
	if s.Via == WorkloadTransaction {
		op, path = OpTransaction, "/api/v1/transaction"
		w.body = AppendTransactionBody(w.body[:0], pb, s, w.txPrefix, w.seq)
	} else {
		w.body = AppendCycleBody(w.body[:0], pb, s, w.txPrefix, w.seq)
	}
	w.seq++
	w.uri = append(w.uri[:0], path...)
	if err := w.do(op, fasthttp.MethodPost, w.uri, w.body, RequestTimeout); err != nil {
		return false, err
	}
	if w.resp.StatusCode() != fasthttp.StatusOK {
		return false, w.statusErr(op)
	}
	return commitApplied(&w.parser, w.resp.Body())
}

// commitApplied reads the top-level success of a cycle or transaction answer.
func commitApplied(p *fastjson.Parser, body []byte) (bool, error) {
	v, err := p.ParseBytes(body)
	if err != nil {
		return false, fmt.Errorf("commit answer: %v: %w", err, ErrBadResponse)
	}
	s := v.Get("success")
	if s == nil || (s.Type() != fastjson.TypeTrue && s.Type() != fastjson.TypeFalse) {
		return false, fmt.Errorf("commit answer has no success: %w", ErrBadResponse)
	}
	return s.Type() == fastjson.TypeTrue, nil
}

// appendSinkItem appends the one sink push item of a commit: to the sink queue, the source
// message's partition name, transactionId txPrefix-c<seq>.
func appendSinkItem(dst []byte, b *PoppedBatch, s *CommitSpec, txPrefix string, seq uint64) []byte {
	dst = append(dst, `{"queue":`...)
	dst = appendJSONString(dst, s.Sink)
	dst = append(dst, `,"partition":"`...)
	dst = appendJSONStringBody(dst, b.lastPartition)
	dst = append(dst, `","transactionId":"`...)
	dst = appendJSONStringBody(dst, txPrefix)
	dst = append(dst, "-c"...)
	dst = strconv.AppendUint(dst, seq, 10)
	dst = append(dst, `","payload":`...)
	dst = append(dst, s.Payload...)
	return append(dst, '}')
}

// AppendCycleBody appends a POST /streams/v1/cycle body (spec 10) as the streams runtimes send
// it: s.StateOps upserts of keys k0..k<n-1> (a window-like object value), one sink push, the
// ack of the batch's last message with count = the batch size, release_lease true.
func AppendCycleBody(dst []byte, b *PoppedBatch, s *CommitSpec, txPrefix string, seq uint64) []byte {
	dst = append(dst, `{"query_id":`...)
	dst = appendJSONString(dst, s.QueryID)
	dst = append(dst, `,"partition_id":"`...)
	dst = appendJSONStringBody(dst, b.lastPartitionID)
	dst = append(dst, '"')
	if s.Group != "" {
		dst = append(dst, `,"consumer_group":`...)
		dst = appendJSONString(dst, s.Group)
	}
	dst = append(dst, `,"state_ops":[`...)
	for i := 0; i < s.StateOps; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"upsert","key":"k`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `","value":{"acc":`...)
		dst = strconv.AppendUint(dst, seq, 10)
		dst = append(dst, `,"windowStart":0,"windowEnd":60000}}`...)
	}
	dst = append(dst, `],"push_items":[`...)
	dst = appendSinkItem(dst, b, s, txPrefix, seq)
	dst = append(dst, `],"ack":{"transactionId":"`...)
	dst = appendJSONStringBody(dst, b.lastTx)
	dst = append(dst, `","leaseId":"`...)
	dst = appendJSONStringBody(dst, b.lastLease)
	dst = append(dst, `","status":"completed","count":`...)
	dst = strconv.AppendInt(dst, int64(b.n), 10)
	return append(dst, `},"release_lease":true}`...)
}

// AppendTransactionBody appends the baseline's POST /api/v1/transaction body (spec 5.1): the
// same sink push and the ack of the batch's last message.
func AppendTransactionBody(dst []byte, b *PoppedBatch, s *CommitSpec, txPrefix string, seq uint64) []byte {
	dst = append(dst, `{"operations":[{"type":"push","items":[`...)
	dst = appendSinkItem(dst, b, s, txPrefix, seq)
	dst = append(dst, `]},{"type":"ack","transactionId":"`...)
	dst = appendJSONStringBody(dst, b.lastTx)
	dst = append(dst, `","partitionId":"`...)
	dst = appendJSONStringBody(dst, b.lastPartitionID)
	dst = append(dst, `","leaseId":"`...)
	dst = appendJSONStringBody(dst, b.lastLease)
	dst = append(dst, `","status":"completed"`...)
	if s.Group != "" {
		dst = append(dst, `,"consumerGroup":`...)
		dst = appendJSONString(dst, s.Group)
	}
	return append(dst, `}]}`...)
}
