package queenimport

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/combmq/comb/broker"
)

// streamQuery is one row of queen_streams.queries.
type streamQuery struct {
	ID                       [16]byte
	Name, Source, Sink, Hash string
}

// importStreams copies Queen's streams (019_streams_schema.sql): each query of
// queen_streams.queries registered by name with its source, sink and config hash (comb keeps
// its own query id for the name, which a client gets back when it registers again), then
// every queen_streams.state row as an upsert of its (query, partition) shard, in cycles of at
// most broker.MaxStreamOpsPerCycle keys with no ack (a window-flush cycle), read in
// (query_id, partition_id, key) order by keyset pagination. Setting a key to the value it
// holds changes nothing, so a second run leaves the same state. skipped counts state rows of a
// partition comb does not hold. A Queen without the streams schema has nothing to copy.
// Errors: a query registered on comb with another config hash (ErrConflict: comb's streams
// ran since; reset it or drop it first), read and write errors.
func importStreams(ctx context.Context, conn *pgx.Conn, b *broker.Broker) (queries, rows, skipped int, err error) {
	var present bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('queen_streams.queries') IS NOT NULL AND to_regclass('queen_streams.state') IS NOT NULL").Scan(&present); err != nil {
		return 0, 0, 0, fmt.Errorf("queenimport: streams: %w", err)
	}
	if !present {
		return 0, 0, 0, nil
	}
	var qs []streamQuery
	err = pgx.BeginTxFunc(ctx, conn, readOnly, func(tx pgx.Tx) error {
		r, err := tx.Query(ctx, `SELECT id, name, source_queue, coalesce(sink_queue,''), config_hash FROM queen_streams.queries ORDER BY name`)
		if err != nil {
			return err
		}
		qs, err = pgx.CollectRows(r, func(r pgx.CollectableRow) (streamQuery, error) {
			var q streamQuery
			err := r.Scan(&q.ID, &q.Name, &q.Source, &q.Sink, &q.Hash)
			return q, err
		})
		return err
	})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("queenimport: streams queries: %w", err)
	}
	combID := make(map[[16]byte]string, len(qs))
	for _, q := range qs {
		res, err := b.StreamRegister(broker.StreamQueryRequest{Name: q.Name, SourceQueue: q.Source, SinkQueue: q.Sink, ConfigHash: q.Hash})
		if err != nil {
			return queries, rows, skipped, fmt.Errorf("queenimport: streams query %s: %w", q.Name, err)
		}
		combID[q.ID] = res.QueryID
		queries++
	}
	var afterQ, afterP [16]byte
	afterKey, first := "", true
	for {
		type row struct {
			q, p [16]byte
			key  string
			val  string
		}
		var page []row
		err := pgx.BeginTxFunc(ctx, conn, readOnly, func(tx pgx.Tx) error {
			r, err := tx.Query(ctx, `SELECT query_id, partition_id, key, value::text FROM queen_streams.state
				WHERE $1 OR (query_id, partition_id, key) > ($2, $3, $4)
				ORDER BY query_id, partition_id, key LIMIT $5`, first, afterQ, afterP, afterKey, PageSize)
			if err != nil {
				return err
			}
			defer r.Close()
			for r.Next() {
				var x row
				if err := r.Scan(&x.q, &x.p, &x.key, &x.val); err != nil {
					return err
				}
				page = append(page, x)
			}
			return r.Err()
		})
		if err != nil {
			return queries, rows, skipped, fmt.Errorf("queenimport: streams state: %w", err)
		}
		if len(page) == 0 {
			return queries, rows, skipped, nil
		}
		for i := 0; i < len(page); {
			j := i
			var ops []broker.StreamStateOp
			for j < len(page) && page[j].q == page[i].q && page[j].p == page[i].p && len(ops) < broker.MaxStreamOpsPerCycle {
				ops = append(ops, broker.StreamStateOp{Type: "upsert", Key: page[j].key, Value: []byte(page[j].val)})
				j++
			}
			qid, ok := combID[page[i].q]
			if !ok {
				skipped += len(ops) // a query deleted on Queen since the queries were read
				i = j
				continue
			}
			res, err := b.StreamCycle(broker.StreamCycleRequest{QueryID: qid, PartitionID: uuid.UUID(page[i].p).String(), StateOps: ops})
			if err != nil {
				return queries, rows, skipped, fmt.Errorf("queenimport: streams state of query %s partition %s: %w", qid, uuid.UUID(page[i].p), err)
			}
			if res.Success {
				rows += len(ops)
			} else {
				skipped += len(ops)
			}
			i = j
		}
		last := page[len(page)-1]
		afterQ, afterP, afterKey, first = last.q, last.p, last.key, false
	}
}
