package broker

import (
	"fmt"

	"github.com/combmq/comb/names"
	"github.com/combmq/comb/streams"
)

// StreamRegister registers a stream query by name (spec 10): a new name gets
// a new query id (Fresh); the same name and config_hash answer the same id
// (the source and sink queues are updated); a different config_hash is
// ErrConflict unless Reset, which wipes the query's state in every partition
// and accepts the new hash, keeping the id. A change is durable in the
// commit log (a walStream entry) before the answer.
//
// Errors: ErrBadRequest (missing or too long name, source_queue or config_hash),
// ErrConflict (a different config_hash without reset), ErrClosed, storage errors.
func (b *Broker) StreamRegister(req StreamQueryRequest) (StreamQueryResult, error) {
	if err := b.enterWrite(); err != nil {
		return StreamQueryResult{}, err
	}
	defer b.leave()
	if err := checkStreamQuery(req); err != nil {
		return StreamQueryResult{}, err
	}
	b.streams.regMu.Lock()
	defer b.streams.regMu.Unlock()
	now := b.now().UnixMicro()
	old, exists := b.streams.store.Lookup(req.Name)
	q := streams.Query{ID: newV7(), Name: req.Name, Source: req.SourceQueue, Sink: req.SinkQueue,
		ConfigHash: req.ConfigHash, CreatedAtMicros: now, UpdatedAtMicros: now}
	res := StreamQueryResult{Name: req.Name, ConfigHash: req.ConfigHash, Fresh: !exists}
	if exists {
		q.ID, q.CreatedAtMicros = old.ID, old.CreatedAtMicros
		if old.ConfigHash != req.ConfigHash {
			if !req.Reset {
				return StreamQueryResult{}, Conflict(fmt.Sprintf("config_hash mismatch: operator chain changed for queryId '%s'. "+
					"Pass reset:true to wipe existing state, or use a new queryId.", req.Name))
			}
			res.Reset = true
		}
	}
	res.QueryID = uuidString(q.ID)
	if exists && !res.Reset && old.Source == q.Source && old.Sink == q.Sink {
		return res, nil // nothing changes: nothing to log
	}
	t, err := b.wal.Append(walStream, streams.EncodeEntry(q, res.Reset))
	if err == nil {
		err = t.Wait()
	}
	if err != nil {
		return StreamQueryResult{}, b.noSpace("the commit log", fmt.Errorf("broker: register stream query %s: commit log: %w", req.Name, err))
	}
	dropped := b.streams.store.ApplyQuery(uint64(t.LSN), q, res.Reset)
	if err := b.streams.files.RemoveShards(dropped); err != nil {
		// The reset is durable: a file left behind is older than it and
		// is dropped at the next start.
		b.log.Warn().Err(err).Str("query", req.Name).Msg("streams: reset could not remove every state file")
	}
	return res, nil
}

// checkStreamQuery is the 400 rules of a registration.
func checkStreamQuery(req StreamQueryRequest) error {
	for _, f := range []struct {
		name, v string
		max     int
	}{{"name", req.Name, MaxStreamQueryNameLen}, {"source_queue", req.SourceQueue, 1 << 20},
		{"config_hash", req.ConfigHash, MaxStreamConfigHashLen}} {
		if f.v == "" {
			return BadRequest(f.name + " is required")
		}
		if len(f.v) > f.max {
			return BadRequest(fmt.Sprintf("%s is longer than %d bytes", f.name, f.max))
		}
	}
	if err := nameErr(names.Queue, req.SourceQueue); err != nil {
		return err
	}
	if req.SinkQueue != "" {
		return nameErr(names.Queue, req.SinkQueue)
	}
	return nil
}

// StreamState reads a (query, partition) shard's rows (spec 10), sorted by
// key: the keys asked (all when none), with KeyPrefix and Match AND-ed. An
// unknown query or partition has no rows.
//
// Errors: ErrBadRequest (missing query_id or partition_id), ErrClosed.
func (b *Broker) StreamState(req StreamStateRequest) ([]StreamStateRow, error) {
	if err := b.enter(); err != nil {
		return nil, err
	}
	defer b.leave()
	if req.QueryID == "" {
		return nil, BadRequest("query_id is required")
	}
	if req.PartitionID == "" {
		return nil, BadRequest("partition_id is required")
	}
	qid, ok1 := parseID(req.QueryID)
	pid, ok2 := parseID(req.PartitionID)
	if !ok1 || !ok2 {
		return []StreamStateRow{}, nil
	}
	rows := b.streams.store.Rows(streams.ShardKey{Query: qid, Partition: pid},
		streams.Filter{Keys: req.Keys, KeyPrefix: req.KeyPrefix, Match: req.Match})
	out := make([]StreamStateRow, len(rows))
	for i, r := range rows {
		out[i] = StreamStateRow{Key: r.Key, Value: r.Value, UpdatedAtMicros: r.UpdatedAtMicros}
	}
	return out, nil
}

// StreamQueries lists the registered queries, by name, with their state size
// (keys and bytes of keys and values, over every shard) and the cycles their
// shards applied.
func (b *Broker) StreamQueries() []StreamQueryInfo {
	if b.streams.store == nil {
		return nil
	}
	qs := b.streams.store.Queries()
	out := make([]StreamQueryInfo, len(qs))
	for i, q := range qs {
		out[i] = StreamQueryInfo{QueryID: uuidString(q.ID), Name: q.Name, SourceQueue: q.Source, SinkQueue: q.Sink,
			ConfigHash: q.ConfigHash, CreatedAtMicros: q.CreatedAtMicros, UpdatedAtMicros: q.UpdatedAtMicros,
			Shards: q.Shards, Keys: q.Keys, StateBytes: q.Bytes, Cycles: q.Cycles}
	}
	return out
}

// StreamStats reports the streams counters for /metrics/prometheus.
func (b *Broker) StreamStats() StreamStats {
	s := StreamStats{Cycles: b.streams.cycles.Load(), FailedCycles: b.streams.failed.Load()}
	if b.streams.store != nil {
		t := b.streams.store.Totals()
		s.Queries, s.StateKeys, s.StateBytes = t.Queries, t.Keys, t.Bytes
	}
	return s
}
