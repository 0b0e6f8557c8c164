package queenimport

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/seal"
)

// Options configures Import.
type Options struct {
	// Key is Queen's QUEEN_ENCRYPTION_KEY; messages Queen stored encrypted are carried in
	// their sealed form under it (comb's seal header names the key). nil refuses encrypted
	// messages rather than storing Queen's ciphertext JSON as a plaintext payload.
	Key *seal.Key
	// Progress, when set, gets one line per partition imported and, at most every
	// ProgressEvery (default 2s) while messages are copied, a progress line: "progress: N of
	// ~TOTAL messages (P%), R messages/s" (TOTAL is PostgreSQL's estimate).
	Progress      io.Writer
	ProgressEvery time.Duration
	// Now is the clock that decides which leases are still live; nil = time.Now.
	Now func() time.Time
	// State, when set, is where each partition's copy stands (state.go): read from it, and
	// saved after every page once that page is durable in comb.
	State *State
}

// Report counts what Import added (a second run of the same source adds nothing).
type Report struct {
	Queues, Partitions             int
	Messages, MessagesSkipped      int64
	Cursors, Leases, Subscriptions int
	DeadLetters                    int
	Traces, TracesSkipped          int // trace events added; skipped: their message not stored, or past comb's cap per message
	StreamQueries, StreamState     int // streams queries registered and state keys set
	StreamStateSkipped             int // state keys of a partition comb does not hold
	LeasesExpired                  int // leases of the source that had expired: not carried
	Elapsed                        time.Duration
}

// Import copies Queen's state from conn into b (a broker opened on a stopped data
// directory, or a live one): queues with their options and ids, partitions with their ids,
// every message in (created_at, id) order with its id, transactionId, traceId, payload,
// createdAt and producerSub, each (partition, group) cursor and live lease, subscription
// records and dead letters. Idempotent. Errors name the table, queue and partition.
func Import(ctx context.Context, conn *pgx.Conn, b *broker.Broker, opts Options) (Report, error) {
	start := time.Now()
	var rep Report
	snap, err := ReadSnapshot(ctx, conn)
	if err != nil {
		return rep, err
	}
	for _, q := range snap.Queues {
		if err := b.ImportQueueDef(QueueDef(q)); err != nil {
			return rep, fmt.Errorf("queenimport: queue %s: %w", q.Name, err)
		}
		rep.Queues++
	}
	prog := progress{w: opts.Progress, every: opts.ProgressEvery, total: snap.EstimatedMessages, start: start, last: start}
	parts := make(map[[16]byte]Partition, len(snap.Partitions))
	for _, p := range snap.Partitions {
		parts[p.ID] = p
		if err := b.ImportPartitionDef(broker.ImportPartition{Queue: p.Queue, Name: p.Name, ID: p.ID,
			CreatedAtMicros: p.CreatedAt.UnixMicro()}); err != nil {
			return rep, fmt.Errorf("queenimport: queue %s partition %s: %w", p.Queue, p.Name, err)
		}
		rep.Partitions++
		var added, seen int64
		var fromTime time.Time
		var fromID [16]byte
		key := uuid.UUID(p.ID).String()
		if opts.State != nil {
			if at, ok := opts.State.Partitions[key]; ok {
				fromTime, fromID = at.CreatedAt, at.ID
			}
		}
		err := ReadMessages(ctx, conn, p, fromTime, fromID, func(page []Message) error {
			in := make([]broker.ImportMessage, len(page))
			for i := range page {
				m, err := importMessage(&page[i], opts.Key)
				if err != nil {
					return fmt.Errorf("queenimport: queue %s partition %s message %s: %w", p.Queue, p.Name, uuid.UUID(page[i].ID), err)
				}
				in[i] = m
			}
			n, err := b.ImportMessages(p.Queue, p.Name, in)
			added += int64(n)
			seen += int64(len(page))
			prog.page(len(page))
			if err != nil || opts.State == nil {
				return err
			}
			last := page[len(page)-1]
			opts.State.Partitions[key] = PartitionState{CreatedAt: last.CreatedAt, ID: last.ID}
			return opts.State.Save()
		})
		rep.Messages += added
		rep.MessagesSkipped += seen - added
		if err != nil {
			return rep, err
		}
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "queue %s partition %s: %d messages (%d new)\n", p.Queue, p.Name, seen, added)
		}
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	for _, c := range snap.Consumers {
		p, ok := parts[c.PartitionID]
		if !ok {
			continue
		}
		ic := broker.ImportCursor{Queue: p.Queue, Partition: p.Name, Group: c.Group, LastTransactionID: c.LastTransactionID, LastID: c.AtID}
		if !c.LeaseExpiresAt.IsZero() && c.WorkerID != "" {
			id, err := uuid.Parse(c.WorkerID)
			switch {
			case err != nil:
				return rep, fmt.Errorf("queenimport: queue %s partition %s group %s: lease id %q is not a UUID", p.Queue, p.Name, c.Group, c.WorkerID)
			case !c.LeaseExpiresAt.After(now()):
				rep.LeasesExpired++
			default:
				ic.Lease = broker.ImportLease{ID: id, ExpiresAtMicros: c.LeaseExpiresAt.UnixMicro(),
					Count: c.BatchSize - c.AckedCount, Retries: uint32(max(c.BatchRetryCount, 0))}
				rep.Leases++
			}
		}
		if err := b.ImportCursorState(ic); err != nil {
			return rep, fmt.Errorf("queenimport: queue %s partition %s group %s: %w", p.Queue, p.Name, c.Group, err)
		}
		rep.Cursors++
	}
	for _, g := range snap.Groups {
		if g.Queue == "" || g.Partition != "" {
			continue // namespace/task or partition-scoped records have no per-queue record in comb
		}
		if err := b.ImportSubscription(g.Queue, g.Group, g.Mode, g.Timestamp.UnixMicro(), g.CreatedAt.UnixMicro()); err != nil {
			return rep, fmt.Errorf("queenimport: subscription of group %s on queue %s: %w", g.Group, g.Queue, err)
		}
		rep.Subscriptions++
	}
	byPart := make(map[[16]byte][]broker.ImportDLQEntry)
	var order [][16]byte
	for _, d := range snap.DeadLetters {
		if _, ok := byPart[d.PartitionID]; !ok {
			order = append(order, d.PartitionID)
		}
		byPart[d.PartitionID] = append(byPart[d.PartitionID], broker.ImportDLQEntry{Key: "queen-dlq/" + uuid.UUID(d.ID).String(),
			TransactionID: d.TransactionID, Group: d.Group, Error: d.Error, RetryCount: d.RetryCount, FailedAtMicros: d.FailedAt.UnixMicro()})
	}
	for _, id := range order {
		p, ok := parts[id]
		if !ok {
			continue
		}
		n, err := b.ImportDLQ(p.Queue, p.Name, byPart[id])
		if err != nil {
			return rep, fmt.Errorf("queenimport: dlq of queue %s partition %s: %w", p.Queue, p.Name, err)
		}
		rep.DeadLetters += n
	}
	if rep.Traces, rep.TracesSkipped, err = importTraces(ctx, conn, b, parts, snap.TakenAt); err != nil {
		return rep, err
	}
	if rep.StreamQueries, rep.StreamState, rep.StreamStateSkipped, err = importStreams(ctx, conn, b); err != nil {
		return rep, err
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// QueueDef maps a queen.queues row to comb's queue options (spec 2.2 names).
func QueueDef(q Queue) broker.ImportQueue {
	o := broker.DefaultQueueOptions()
	o.LeaseTime, o.RetryLimit, o.RetryDelay, o.TTL, o.Priority = q.LeaseTime, q.RetryLimit, q.RetryDelay, q.TTL, q.Priority
	o.MaxSize, o.DelayedProcessing, o.WindowBuffer = q.MaxQueueSize, q.DelayedProcessing, q.WindowBuffer
	o.RetentionSeconds, o.CompletedRetentionSeconds, o.MaxWaitTimeSeconds = q.RetentionSeconds, q.CompletedRetentionSeconds, q.MaxWaitTimeSeconds
	o.RetentionEnabled, o.EncryptionEnabled = q.RetentionEnabled, q.EncryptionEnabled
	o.DeadLetterQueue, o.DLQAfterMaxRetries = q.DeadLetterQueue, q.DLQAfterMaxRetries
	return broker.ImportQueue{ID: q.ID, Name: q.Name, Namespace: q.Namespace, Task: q.Task, CreatedAtMicros: q.CreatedAt.UnixMicro(), Options: o}
}

// importMessage is m as comb stores it.
func importMessage(m *Message, key *seal.Key) (broker.ImportMessage, error) {
	payload := m.Payload
	if m.Encrypted {
		var err error
		if payload, err = sealedForm(payload, key); err != nil {
			return broker.ImportMessage{}, err
		}
	}
	return broker.ImportMessage{ID: m.ID, TransactionID: m.TransactionID, TraceID: m.TraceID, ProducerSub: m.ProducerSub,
		Payload: payload, CreatedAtMicros: m.CreatedAt.UnixMicro()}, nil
}

// sealedForm turns Queen's encrypted payload {"encrypted","iv","authTag"} (base64 fields,
// AES-256-GCM under QUEEN_ENCRYPTION_KEY) into comb's stored form: seal's header (marker,
// version 1, the key's id) and the same three fields in seal's exact spelling (spec 9.2).
func sealedForm(payload []byte, key *seal.Key) ([]byte, error) {
	if key == nil {
		return nil, fmt.Errorf("the message is encrypted: set QUEEN_ENCRYPTION_KEY to Queen's key to carry it")
	}
	var f struct{ Encrypted, IV, AuthTag string }
	if err := json.Unmarshal(payload, &struct {
		Encrypted *string `json:"encrypted"`
		IV        *string `json:"iv"`
		AuthTag   *string `json:"authTag"`
	}{&f.Encrypted, &f.IV, &f.AuthTag}); err != nil || f.Encrypted == "" || f.IV == "" || f.AuthTag == "" {
		return nil, fmt.Errorf("is_encrypted but the payload is not {encrypted, iv, authTag}")
	}
	for _, b64 := range []string{f.Encrypted, f.IV, f.AuthTag} {
		if _, err := base64.StdEncoding.DecodeString(b64); err != nil {
			return nil, fmt.Errorf("is_encrypted but a field of the payload is not base64: %w", err)
		}
	}
	id, err := hex.DecodeString(key.ID())
	if err != nil {
		return nil, err
	}
	out := append([]byte{0, 1}, id...)
	out = append(out, `{"encrypted":"`+f.Encrypted+`","iv":"`+f.IV+`","authTag":"`+f.AuthTag+`"}`...)
	return out, nil
}

// progress writes Import's progress line at most every `every`.
type progress struct {
	w           io.Writer
	every       time.Duration
	total, done int64
	start, last time.Time
}

func (p *progress) page(n int) {
	p.done += int64(n)
	if p.w == nil {
		return
	}
	every := p.every
	if every <= 0 {
		every = 2 * time.Second
	}
	now := time.Now()
	if now.Sub(p.last) < every {
		return
	}
	p.last = now
	rate := float64(p.done) / max(now.Sub(p.start).Seconds(), 1e-9)
	if p.total > 0 {
		fmt.Fprintf(p.w, "progress: %d of ~%d messages (%.0f%%), %.0f messages/s\n", p.done, p.total, 100*float64(p.done)/float64(max(p.total, p.done)), rate)
		return
	}
	fmt.Fprintf(p.w, "progress: %d messages, %.0f messages/s\n", p.done, rate)
}
