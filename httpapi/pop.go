package httpapi

import (
	"strconv"

	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/names"
)

// Broker defaults of seed 000's parameter table (spec 3.2).
const (
	defaultPopBatch      = 200
	defaultPopPartitions = 1
)

// queryArgs reads spec 0.3 parameters: a parameter present with an empty value is absent;
// booleans are true for "true" or "1"; an unparsable integer falls back to its default.
type queryArgs struct{ a *fasthttp.Args }

func (q queryArgs) str(key string) string { return string(q.a.Peek(key)) }

func (q queryArgs) integer(key string, def int64) int64 {
	v := q.a.Peek(key)
	if len(v) == 0 {
		return def
	}
	n, err := strconv.ParseInt(b2s(v), 10, 64)
	if err != nil {
		return def
	}
	return n
}

func (q queryArgs) boolean(key string, def bool) bool {
	v := q.a.Peek(key)
	if len(v) == 0 {
		return def
	}
	s := b2s(v)
	return s == "true" || s == "1"
}

// popRequest applies seed 000's defaults and the clamps of spec 3.2 to the query string.
// queue and partition come from the path ("" when absent). msg is the 400 message.
func (s *Server) popRequest(ctx *fasthttp.RequestCtx, queue, partition string) (req broker.PopRequest, msg string) {
	q := queryArgs{ctx.QueryArgs()}
	req.Queue, req.Partition = queue, partition
	req.Batch = int(min(max(q.integer("batch", defaultPopBatch), 1), int64(s.cfg.MaxBatch)))
	req.Partitions = int(min(max(q.integer("partitions", defaultPopPartitions), 1), 1<<20))
	if partition != "" {
		req.Partitions = 1 // targeted pop: `partitions` is ignored (spec 3.1)
	}
	req.Group = q.str("consumerGroup")
	req.AutoAck = q.boolean("autoAck", false)
	req.Wait = q.boolean("wait", false)
	req.Timeout = s.cfg.DefaultPopTimeout
	if ms := q.integer("timeout", -1); ms >= 0 {
		req.Timeout = clampTimeout(ms)
	}
	req.LeaseSeconds = q.integer("leaseSeconds", 0)
	req.SubscriptionMode = q.str("subscriptionMode")
	req.SubscriptionFrom = q.str("subscriptionFrom")
	req.WorkerID = q.str("workerId")
	if queue == "" {
		req.Namespace, req.Task = q.str("namespace"), q.str("task")
	}
	if msg = checkGroup(req.Group); msg != "" {
		return req, msg
	}
	if msg = labelMsg(names.Namespace, req.Namespace); msg != "" {
		return req, msg
	}
	return req, labelMsg(names.Task, req.Task)
}

// popQueue serves the wildcard and the targeted pops (spec 3.1).
func (s *Server) popQueue(ctx *fasthttp.RequestCtx, queue, partition string, targeted bool) {
	if m := nameMsg(names.Queue, queue); m != "" {
		badRequest(ctx, m)
		return
	}
	// The targeted route names its partition: an empty one there is a client bug, not Default.
	if targeted {
		if m := nameMsg(names.Partition, partition); m != "" {
			badRequest(ctx, m)
			return
		}
	}
	req, msg := s.popRequest(ctx, queue, partition)
	if msg != "" {
		badRequest(ctx, msg)
		return
	}
	s.pop(ctx, req)
}

// popDiscovery serves GET /api/v1/pop?namespace=&task= (spec 3.1): 400 with neither filter.
func (s *Server) popDiscovery(ctx *fasthttp.RequestCtx) {
	req, msg := s.popRequest(ctx, "", "")
	if msg == "" && req.Namespace == "" && req.Task == "" {
		if s.b.Maintenance().PopMaintenance {
			noContent(ctx) // spec 8.8: every pop answers a bodiless 204, even one that would be refused
			return
		}
		msg = "namespace or task is required"
	}
	if msg != "" {
		badRequest(ctx, msg)
		return
	}
	s.pop(ctx, req)
}

// pop runs the pop and answers 200 with the envelope, or 204 with no body at all when nothing
// was delivered (seed 000; spec 3.4), including a long-poll cut short by shutdown.
func (s *Server) pop(ctx *fasthttp.RequestCtx, req broker.PopRequest) {
	pctx := s.popCtx
	if req.Wait && req.Timeout > 0 {
		var stop func()
		pctx, stop = s.watchDisconnect(ctx)
		defer stop()
	}
	res, err := s.b.Pop(pctx, req)
	if err != nil {
		if pctx.Err() != nil {
			noContent(ctx)
			return
		}
		s.fail(ctx, err)
		return
	}
	// The payloads alias broker buffers until Release; encoding copies them into the response.
	defer res.Release()
	if len(res.Messages) == 0 {
		s.noteMissingQueue(ctx, req.Queue)
		noContent(ctx)
		return
	}
	group := res.Group
	if group == "" {
		group = req.Group
	}
	if group == "" {
		group = broker.QueueModeGroup
	}
	p := getBuf()
	*p = appendPopResult(*p, &res, group)
	sendJSON(ctx, fasthttp.StatusOK, p)
}

// appendPopResult encodes the envelope and messages of spec 3.3. The run of fields a message
// shares with its neighbours of the same partition (partitionId, partition, leaseId,
// consumerGroup) is encoded once per run, and createdAt once per segment timestamp.
func appendPopResult(b []byte, r *broker.PopResult, group string) []byte {
	b = append(b, `{"success":true,"queue":`...)
	b = appendString(b, r.Queue)
	b = append(b, `,"partition":`...)
	b = appendString(b, r.Partition)
	b = append(b, `,"partitionId":`...)
	b = appendString(b, r.PartitionID)
	b = append(b, `,"leaseId":`...)
	b = appendString(b, r.LeaseID)
	b = append(b, `,"consumerGroup":`...)
	b = appendString(b, group)
	b = append(b, `,"partitionsClaimed":`...)
	b = appendInt(b, int64(r.PartitionsClaimed))
	b = append(b, `,"messages":[`...)

	var created createdAtCache
	sp := getBuf()
	defer putBuf(sp)
	run := *sp // `,"partitionId":…,"partition":…,"leaseId":…,"consumerGroup":…,"retryCount":`
	var tailArr [96]byte
	tail := tailArr[:0] // `,"queue":…}`
	runPID, runPart, runQueue := "", "", ""
	for i := range r.Messages {
		m := &r.Messages[i]
		if i == 0 || m.PartitionID != runPID || m.Partition != runPart {
			runPID, runPart = m.PartitionID, m.Partition
			run = append(run[:0], `,"partitionId":`...)
			run = appendString(run, m.PartitionID)
			run = append(run, `,"partition":`...)
			run = appendString(run, m.Partition)
			run = append(run, `,"leaseId":`...)
			run = appendString(run, r.LeaseID)
			run = append(run, `,"consumerGroup":`...)
			run = appendString(run, group)
			run = append(run, `,"retryCount":`...)
		}
		if i == 0 || m.Queue != runQueue {
			runQueue = m.Queue
			tail = append(tail[:0], `,"queue":`...)
			tail = appendString(tail, m.Queue)
			tail = append(tail, '}')
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = appendUUIDString(b, m.ID)
		b = append(b, `,"transactionId":`...)
		b = appendString(b, m.TransactionID)
		b = append(b, `,"traceId":`...)
		b = appendStringOrNull(b, m.TraceID)
		b = append(b, `,"data":`...)
		b = appendRaw(b, m.Payload)
		if m.PayloadError != "" {
			b = appendDecryptionError(b, m.PayloadError)
		}
		b = append(b, `,"producerSub":`...)
		b = appendStringOrNull(b, m.ProducerSub)
		b = append(b, `,"createdAt":`...)
		b = created.append(b, m.CreatedAtMicros)
		b = append(b, run...)
		b = appendInt(b, m.RetryCount)
		b = append(b, tail...)
	}
	*sp = run
	return append(b, ']', '}')
}
