package queenimport

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/combmq/comb/broker"
)

// importTraces copies queen.message_traces (with message_trace_names) in (created_at, id)
// order, page by page (keyset pagination, one read-only transaction per page), each event
// with its id and time. Only events of messages in parts are copied: a page's events name
// messages the snapshot saw, so they are stored (the messages pass ran first); an event of a
// message pushed after the snapshot waits for a later run. Returns the events added and those
// skipped (their message not stored, or past comb's per-message cap).
func importTraces(ctx context.Context, conn *pgx.Conn, b *broker.Broker, parts map[[16]byte]Partition, takenAt time.Time) (added, skipped int, err error) {
	var afterTime time.Time
	var afterID [16]byte
	for {
		var page []broker.ImportTrace
		var lastAt time.Time
		var lastID [16]byte
		err := pgx.BeginTxFunc(ctx, conn, readOnly, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT t.id, t.partition_id, t.transaction_id, coalesce(t.consumer_group,''),
				coalesce(t.event_type,''), coalesce(t.worker_id,''), t.data::text, t.created_at,
				coalesce((SELECT array_agg(n.trace_name ORDER BY n.trace_name) FROM queen.message_trace_names n WHERE n.trace_id = t.id), '{}')
				FROM queen.message_traces t
				WHERE t.created_at <= $1 AND (t.created_at, t.id) > ($2, $3)
				ORDER BY t.created_at, t.id LIMIT $4`, takenAt, afterTime, afterID, PageSize)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var e broker.ImportTrace
				var pid *[16]byte
				var data string
				var at time.Time
				if err := rows.Scan(&e.ID, &pid, &e.TransactionID, &e.Group, &e.EventType, &e.WorkerID, &data, &at, &e.Names); err != nil {
					return err
				}
				lastAt, lastID = at, e.ID
				if pid == nil {
					continue
				}
				if _, ok := parts[*pid]; !ok {
					continue
				}
				e.PartitionID, e.Data, e.CreatedAtMicros = *pid, []byte(data), at.UnixMicro()
				page = append(page, e)
			}
			return rows.Err()
		})
		if err != nil {
			return added, skipped, fmt.Errorf("queenimport: message_traces: %w", err)
		}
		if lastAt.IsZero() {
			return added, skipped, nil
		}
		n, over, err := b.ImportTraces(page)
		added, skipped = added+n, skipped+over
		if err != nil {
			return added, skipped, fmt.Errorf("queenimport: message_traces: %w", err)
		}
		afterTime, afterID = lastAt, lastID
	}
}
