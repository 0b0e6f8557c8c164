package queenimport

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Queue is one row of queen.queues with every option.
type Queue struct {
	ID                                          [16]byte
	Name, Namespace, Task                       string
	Priority, LeaseTime, RetryLimit, RetryDelay int64
	TTL, DelayedProcessing, WindowBuffer        int64
	RetentionSeconds, CompletedRetentionSeconds int64
	MaxWaitTimeSeconds, MaxQueueSize            int64
	DeadLetterQueue, DLQAfterMaxRetries         bool
	RetentionEnabled, EncryptionEnabled         bool
	CreatedAt                                   time.Time
}

// Partition is one row of queen.partitions, with the newest message's (created_at, id) as
// the snapshot saw it: the bound of the message pages (zero time = no messages).
type Partition struct {
	ID        [16]byte
	Queue     string
	Name      string
	CreatedAt time.Time
	HWMTime   time.Time
	HWMID     [16]byte
}

// Message is one row of queen.messages.
type Message struct {
	ID            [16]byte
	TransactionID string
	TraceID       string // "" when NULL
	Payload       []byte // the jsonb as text
	CreatedAt     time.Time
	Encrypted     bool
	ProducerSub   string
}

// Consumer is one row of queen.partition_consumers: a (partition, group) cursor and lease.
type Consumer struct {
	PartitionID [16]byte
	Group       string
	LastID      [16]byte // Queen's last_consumed_id; zero when nothing is consumed
	// LastTransactionID and AtID name the message the cursor is at: LastID's message, or when
	// retention deleted it the newest stored one before it ("" and zero: none).
	LastTransactionID string
	AtID              [16]byte
	LastCreatedAt     time.Time
	LeaseExpiresAt    time.Time // zero when none
	WorkerID          string    // the lease id
	BatchSize         int
	AckedCount        int
	BatchRetryCount   int
}

// GroupMeta is one row of queen.consumer_groups_metadata.
type GroupMeta struct {
	Group, Queue, Partition, Namespace, Task string
	Mode                                     string
	Timestamp, CreatedAt                     time.Time
}

// DeadLetter is one row of queen.dead_letter_queue with its message's transactionId.
type DeadLetter struct {
	ID            [16]byte
	PartitionID   [16]byte
	TransactionID string
	Group         string
	Error         string
	RetryCount    int64
	FailedAt      time.Time
}

// Snapshot is everything but the messages, read in one REPEATABLE READ, READ ONLY
// transaction: the cursors, leases and dead letters all name messages at or below their
// partition's high-water mark in the same snapshot.
type Snapshot struct {
	Queues      []Queue
	Partitions  []Partition // ordered by queue name, partition name
	Consumers   []Consumer
	Groups      []GroupMeta
	DeadLetters []DeadLetter
	TakenAt     time.Time // the database's clock at the snapshot
	// EstimatedMessages is PostgreSQL's estimate of queen.messages' rows (pg_class.reltuples,
	// as of its last ANALYZE or VACUUM; ≤ 0 unknown): the progress line's total, not a count.
	EstimatedMessages int64
}

// readOnly is the isolation of every read: one consistent snapshot per transaction, no writes.
var readOnly = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}

// ReadSnapshot reads queues, partitions (with their high-water marks), consumers,
// subscription metadata and dead letters in one short read-only transaction.
func ReadSnapshot(ctx context.Context, conn *pgx.Conn) (*Snapshot, error) {
	s := &Snapshot{}
	err := pgx.BeginTxFunc(ctx, conn, readOnly, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT now(), coalesce((SELECT reltuples::bigint FROM pg_class WHERE oid = 'queen.messages'::regclass), -1)").Scan(&s.TakenAt, &s.EstimatedMessages); err != nil {
			return fmt.Errorf("clock: %w", err)
		}
		if err := readQueues(ctx, tx, s); err != nil {
			return err
		}
		if err := readPartitions(ctx, tx, s); err != nil {
			return err
		}
		if err := readConsumers(ctx, tx, s); err != nil {
			return err
		}
		if err := readGroups(ctx, tx, s); err != nil {
			return err
		}
		return readDeadLetters(ctx, tx, s)
	})
	if err != nil {
		return nil, fmt.Errorf("queenimport: snapshot: %w", err)
	}
	return s, nil
}

func readQueues(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	rows, err := tx.Query(ctx, `SELECT id, name, coalesce(namespace,''), coalesce(task,''), coalesce(priority,0),
		coalesce(lease_time,300), coalesce(retry_limit,3), coalesce(retry_delay,1000), coalesce(ttl,3600),
		coalesce(dead_letter_queue,false), coalesce(dlq_after_max_retries,false), coalesce(delayed_processing,0),
		coalesce(window_buffer,0), coalesce(retention_seconds,0), coalesce(completed_retention_seconds,0),
		coalesce(retention_enabled,false), coalesce(encryption_enabled,false), coalesce(max_wait_time_seconds,0),
		coalesce(max_queue_size,0), coalesce(created_at, now())
		FROM queen.queues ORDER BY name`)
	if err != nil {
		return fmt.Errorf("queues: %w", err)
	}
	s.Queues, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Queue, error) {
		var q Queue
		err := r.Scan(&q.ID, &q.Name, &q.Namespace, &q.Task, &q.Priority, &q.LeaseTime, &q.RetryLimit, &q.RetryDelay, &q.TTL,
			&q.DeadLetterQueue, &q.DLQAfterMaxRetries, &q.DelayedProcessing, &q.WindowBuffer, &q.RetentionSeconds,
			&q.CompletedRetentionSeconds, &q.RetentionEnabled, &q.EncryptionEnabled, &q.MaxWaitTimeSeconds, &q.MaxQueueSize, &q.CreatedAt)
		return q, err
	})
	if err != nil {
		return fmt.Errorf("queues: %w", err)
	}
	return nil
}

func readPartitions(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	// The newest message by (created_at, id) per partition, from the messages index
	// (partition_id, created_at, id) Queen keeps for its pops.
	// No count(*): it would read every message's index entry, and the cutover of a live move
	// takes this snapshot while Queen's consumers wait.
	rows, err := tx.Query(ctx, `SELECT p.id, q.name, p.name, coalesce(p.created_at, now()), h.created_at, h.id
		FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id
		LEFT JOIN LATERAL (SELECT m.created_at, m.id FROM queen.messages m WHERE m.partition_id = p.id
			ORDER BY m.created_at DESC, m.id DESC LIMIT 1) h ON true
		ORDER BY q.name, p.name`)
	if err != nil {
		return fmt.Errorf("partitions: %w", err)
	}
	s.Partitions, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Partition, error) {
		var p Partition
		var ht *time.Time
		var hid *[16]byte
		err := r.Scan(&p.ID, &p.Queue, &p.Name, &p.CreatedAt, &ht, &hid)
		if ht != nil && hid != nil {
			p.HWMTime, p.HWMID = *ht, *hid
		}
		return p, err
	})
	if err != nil {
		return fmt.Errorf("partitions: %w", err)
	}
	return nil
}

func readConsumers(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	// The cursor is the last message at or before (last_consumed_created_at, last_consumed_id):
	// the consumed message itself, or, when retention deleted it, the newest one left before
	// it (none: nothing consumed that is still stored, the cursor is at the start).
	rows, err := tx.Query(ctx, `SELECT pc.partition_id, pc.consumer_group, pc.last_consumed_id, coalesce(m.transaction_id,''),
		m.id, pc.last_consumed_created_at, pc.lease_expires_at, coalesce(pc.worker_id,''), coalesce(pc.batch_size,0),
		coalesce(pc.acked_count,0), coalesce(pc.batch_retry_count,0)
		FROM queen.partition_consumers pc
		LEFT JOIN LATERAL (SELECT c.transaction_id, c.id FROM queen.messages c WHERE c.partition_id = pc.partition_id
			AND pc.last_consumed_created_at IS NOT NULL
			AND (c.created_at, c.id) <= (pc.last_consumed_created_at, pc.last_consumed_id)
			ORDER BY c.created_at DESC, c.id DESC LIMIT 1) m ON true
		ORDER BY pc.partition_id, pc.consumer_group`)
	if err != nil {
		return fmt.Errorf("partition_consumers: %w", err)
	}
	s.Consumers, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Consumer, error) {
		var c Consumer
		var lastAt, leaseAt *time.Time
		var at *[16]byte
		err := r.Scan(&c.PartitionID, &c.Group, &c.LastID, &c.LastTransactionID, &at, &lastAt, &leaseAt, &c.WorkerID,
			&c.BatchSize, &c.AckedCount, &c.BatchRetryCount)
		if at != nil {
			c.AtID = *at
		}
		if lastAt != nil {
			c.LastCreatedAt = *lastAt
		}
		if leaseAt != nil {
			c.LeaseExpiresAt = *leaseAt
		}
		return c, err
	})
	if err != nil {
		return fmt.Errorf("partition_consumers: %w", err)
	}
	return nil
}

func readGroups(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	rows, err := tx.Query(ctx, `SELECT consumer_group, queue_name, partition_name, namespace, task, subscription_mode,
		subscription_timestamp, created_at FROM queen.consumer_groups_metadata ORDER BY consumer_group, queue_name`)
	if err != nil {
		return fmt.Errorf("consumer_groups_metadata: %w", err)
	}
	s.Groups, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (GroupMeta, error) {
		var g GroupMeta
		err := r.Scan(&g.Group, &g.Queue, &g.Partition, &g.Namespace, &g.Task, &g.Mode, &g.Timestamp, &g.CreatedAt)
		return g, err
	})
	if err != nil {
		return fmt.Errorf("consumer_groups_metadata: %w", err)
	}
	return nil
}

func readDeadLetters(ctx context.Context, tx pgx.Tx, s *Snapshot) error {
	rows, err := tx.Query(ctx, `SELECT d.id, m.partition_id, m.transaction_id, coalesce(d.consumer_group,'__QUEUE_MODE__'),
		coalesce(d.error_message,''), coalesce(d.retry_count,0), coalesce(d.failed_at, now())
		FROM queen.dead_letter_queue d JOIN queen.messages m ON m.id = d.message_id
		ORDER BY d.failed_at, d.id`)
	if err != nil {
		return fmt.Errorf("dead_letter_queue: %w", err)
	}
	s.DeadLetters, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeadLetter, error) {
		var d DeadLetter
		err := r.Scan(&d.ID, &d.PartitionID, &d.TransactionID, &d.Group, &d.Error, &d.RetryCount, &d.FailedAt)
		return d, err
	})
	if err != nil {
		return fmt.Errorf("dead_letter_queue: %w", err)
	}
	return nil
}

// PageSize is the messages of one page: one short read-only transaction each.
const PageSize = 5000

// ReadMessages calls fn with the messages of p in (created_at, id) order, page by page
// (keyset pagination: each page starts after the last (created_at, id) of the one before, up
// to and including the snapshot's high-water mark, so rows pushed after the snapshot wait for
// the next pass). Each page is its own REPEATABLE READ, READ ONLY transaction; fn runs
// outside it. after is where to start (zero time: the beginning).
func ReadMessages(ctx context.Context, conn *pgx.Conn, p Partition, afterTime time.Time, afterID [16]byte,
	fn func([]Message) error) error {
	if p.HWMTime.IsZero() {
		return nil
	}
	const cols = `SELECT id, transaction_id, coalesce(trace_id::text,''), payload::text, created_at,
		coalesce(is_encrypted,false), coalesce(producer_sub,'') FROM queen.messages WHERE partition_id = $1 `
	const bound = ` AND (created_at, id) <= ($2, $3) ORDER BY created_at, id LIMIT $4`
	query := func(first bool, afterTime time.Time, afterID [16]byte) (string, []any) {
		if first {
			return cols + bound, []any{p.ID, p.HWMTime, p.HWMID, PageSize}
		}
		return cols + `AND (created_at, id) > ($5, $6)` + bound, []any{p.ID, p.HWMTime, p.HWMID, PageSize, afterTime, afterID}
	}
	return readPages(ctx, conn, query, afterTime, afterID, fn,
		fmt.Sprintf("queenimport: messages of queue %s partition %s", p.Queue, p.Name))
}

// pageQuery returns the SQL and arguments of one page of messages: the first page's (first,
// no keyset bound below), or the page after (afterTime, afterID).
type pageQuery func(first bool, afterTime time.Time, afterID [16]byte) (string, []any)

// readPages runs query page by page (keyset pagination in (created_at, id) order, each page its
// own REPEATABLE READ, READ ONLY transaction, fn outside it) from (afterTime, afterID) (zero
// time: the first page) until a page is short. A read error is wrapped with what; fn's error is
// returned as it is.
//
// The next page is read while fn works on the one before (conn is used by the reading
// goroutine only, fn runs on the caller's, in page order): PostgreSQL's side of a read and
// comb's side of an import then run on two cores at once instead of taking turns. A page
// handed to fn is not touched again until fn returned.
func readPages(ctx context.Context, conn *pgx.Conn, query pageQuery, afterTime time.Time, afterID [16]byte,
	fn func([]Message) error, what string) error {
	type result struct {
		page []Message
		err  error
	}
	pages := make(chan result, 1) // one page read ahead
	free := make(chan []Message, 2)
	free <- nil
	free <- nil
	// quit stops the reader after fn failed. Not a cancelled context: pgx closes a
	// connection whose query a context cancels, and conn is the caller's again afterwards
	// (a follow pass that failed is retried on it), so a read in flight finishes first.
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(pages)
		for {
			var page []Message
			select {
			case page = <-free:
			case <-quit:
				return
			}
			page = page[:0]
			err := pgx.BeginTxFunc(ctx, conn, readOnly, func(tx pgx.Tx) error {
				sql, args := query(afterTime.IsZero(), afterTime, afterID)
				rows, err := tx.Query(ctx, sql, args...)
				if err != nil {
					return err
				}
				page, err = collectMessages(rows, page)
				return err
			})
			r := result{page: page}
			if err != nil {
				r = result{err: fmt.Errorf("%s: %w", what, err)}
			}
			select {
			case pages <- r:
			case <-quit: // fn failed: nobody reads on
				return
			}
			if err != nil || len(page) < PageSize {
				return
			}
			last := page[len(page)-1]
			afterTime, afterID = last.CreatedAt, last.ID
		}
	}()
	defer func() {
		close(quit)
		<-done // conn is the caller's again only once the reader has let it go
	}()
	for r := range pages {
		if r.err != nil {
			return r.err
		}
		if len(r.page) > 0 {
			if err := fn(r.page); err != nil {
				return err
			}
		}
		free <- r.page
	}
	return nil
}

// collectMessages appends the rows of a messages query (id, transaction_id, trace_id,
// payload, created_at, is_encrypted, producer_sub) to page.
func collectMessages(rows pgx.Rows, page []Message) ([]Message, error) {
	defer rows.Close()
	for rows.Next() {
		var m Message
		var payload string
		if err := rows.Scan(&m.ID, &m.TransactionID, &m.TraceID, &payload, &m.CreatedAt, &m.Encrypted, &m.ProducerSub); err != nil {
			return page, err
		}
		m.Payload = []byte(payload)
		page = append(page, m)
	}
	return page, rows.Err()
}
