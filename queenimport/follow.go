package queenimport

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/seal"
)

// A live move (issue 24, `--follow`): after the snapshot import, passes keep copying the
// messages that reach Queen, until the operator has moved producers to comb.
//
// Why a pass reads by time window and not from the last (created_at, id) it copied: Queen's
// created_at is the pushing transaction's start (DEFAULT NOW()), and that transaction commits
// later, so a row can become visible with a (created_at, id) below rows already read. A pass
// therefore copies only rows created before its bound U, the start of the oldest transaction
// open on Queen's database (pg_stat_activity, read before the pass's snapshot): every row
// created before U is committed or will never be, because a transaction that inserts it later
// would have to be open now and started before U. When the importing role cannot see other
// roles' sessions (no pg_read_all_stats), the bound is the database clock minus the overlap
// window instead. Either way each pass re-reads the overlap window below the previous bound
// and skips what it already copied (by message id; the broker skips by transactionId), so a
// row that commits up to an overlap late is still copied, never twice.

// FollowOptions tunes the passes of a live move.
type FollowOptions struct {
	// Overlap is how far below the previous pass's bound each pass reads again (default
	// DefaultOverlap).
	Overlap time.Duration
	// Interval is the pause between passes (default DefaultInterval).
	Interval time.Duration
}

// Defaults of FollowOptions.
const (
	DefaultOverlap  = 10 * time.Second
	DefaultInterval = time.Second
)

// Follower copies the messages that reach Queen after a snapshot import, pass by pass, and
// does the cutover (Cutover). Not safe for concurrent use: one goroutine runs its passes.
type Follower struct {
	conn *pgx.Conn
	b    *broker.Broker
	key  *seal.Key
	opts FollowOptions

	// prev is the bound of the previous pass (or of the snapshot import).
	prev  time.Time
	exact bool // prev came from pg_stat_activity, not from the clock
	// seen holds, per partition, the ids copied at or above the next pass's lower bound with
	// their createdAt, so the overlap's re-read sends the broker only what is new.
	seen map[[16]byte]map[[16]byte]time.Time
	// queues and parts are what the passes have imported (a changed queue is imported again).
	queues map[string]Queue
	parts  map[[16]byte]Partition
	// state is each partition's newest copied (created_at, id), where Cutover's import reads on.
	state *State

	// Passes and Messages count the passes run and the messages they added.
	Passes, Messages int64
}

// NewFollower returns a Follower for conn and b. Call Start before the snapshot import (it
// takes the first bound), then Pass as often as wanted.
func NewFollower(conn *pgx.Conn, b *broker.Broker, key *seal.Key, opts FollowOptions) *Follower {
	if opts.Overlap <= 0 {
		opts.Overlap = DefaultOverlap
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	return &Follower{conn: conn, b: b, key: key, opts: opts, seen: map[[16]byte]map[[16]byte]time.Time{},
		queues: map[string]Queue{}, parts: map[[16]byte]Partition{}, state: memoryState()}
}

// Options returns the options in force (defaults filled in).
func (f *Follower) Options() FollowOptions { return f.opts }

// State is where each partition's copy stands; pass it as Options.State to the snapshot
// import so Cutover's import reads on from the newest copied message.
func (f *Follower) State() *State { return f.state }

// Bound is the bound of the last pass (rows created before it are copied) and whether it came
// from Queen's open transactions (true) or from the clock minus the overlap (false).
func (f *Follower) Bound() (time.Time, bool) { return f.prev, f.exact }

// Start takes the bound the snapshot import covers: call it before Import. Errors: the query's.
func (f *Follower) Start(ctx context.Context) error {
	u, exact, err := f.bound(ctx)
	if err != nil {
		return err
	}
	f.prev, f.exact = u, exact
	return nil
}

// bound is the upper bound of a pass: the start of the oldest transaction open on the
// database (other than this connection's), or the clock when none is; the clock minus the
// overlap when some sessions are hidden from this role.
func (f *Follower) bound(ctx context.Context) (time.Time, bool, error) {
	var clock time.Time
	var oldest *time.Time
	var hidden int64
	err := f.conn.QueryRow(ctx, `SELECT clock_timestamp(),
		min(xact_start) FILTER (WHERE pid <> pg_backend_pid()),
		count(*) FILTER (WHERE pid <> pg_backend_pid() AND query = '<insufficient privilege>')
		FROM pg_stat_activity WHERE datname = current_database() AND (backend_type = 'client backend' OR backend_type IS NULL)`).Scan(&clock, &oldest, &hidden)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("queenimport: follow: open transactions: %w", err)
	}
	if hidden > 0 {
		return clock.Add(-f.opts.Overlap), false, nil
	}
	if oldest != nil && oldest.Before(clock) {
		return *oldest, true, nil
	}
	return clock, true, nil
}

// Pass copies new queues, partitions and the messages created in [previous bound − overlap,
// bound) that comb does not hold, and returns how many messages it added. Errors name the
// table, queue and partition; a failed pass can be run again (nothing is copied twice).
func (f *Follower) Pass(ctx context.Context) (int64, error) {
	u, exact, err := f.bound(ctx)
	if err != nil {
		return 0, err
	}
	if u.Before(f.prev) {
		u = f.prev // the clock fallback can step back; a window never shrinks below what was read
	}
	queues, parts, err := readDefinitions(ctx, f.conn)
	if err != nil {
		return 0, err
	}
	for _, q := range queues {
		if old, ok := f.queues[q.Name]; ok && old == q {
			continue
		}
		if err := f.b.ImportQueueDef(QueueDef(q)); err != nil {
			return 0, fmt.Errorf("queenimport: follow: queue %s: %w", q.Name, err)
		}
		f.queues[q.Name] = q
	}
	lower := f.prev.Add(-f.opts.Overlap)
	var added int64
	for _, p := range parts {
		if _, ok := f.parts[p.ID]; !ok {
			if err := f.b.ImportPartitionDef(broker.ImportPartition{Queue: p.Queue, Name: p.Name, ID: p.ID,
				CreatedAtMicros: p.CreatedAt.UnixMicro()}); err != nil {
				return added, fmt.Errorf("queenimport: follow: queue %s partition %s: %w", p.Queue, p.Name, err)
			}
			f.parts[p.ID] = p
		}
		n, err := f.passPartition(ctx, p, lower, u)
		added += n
		if err != nil {
			return added, err
		}
	}
	// What the next pass re-reads starts at u − overlap: older ids are never sent again.
	next := u.Add(-f.opts.Overlap)
	for pid, ids := range f.seen {
		for id, at := range ids {
			if at.Before(next) {
				delete(ids, id)
			}
		}
		if len(ids) == 0 {
			delete(f.seen, pid)
		}
	}
	f.prev, f.exact = u, exact
	f.Passes++
	f.Messages += added
	return added, nil
}

// passPartition copies p's messages created in [lower, upper) that are not in f.seen.
func (f *Follower) passPartition(ctx context.Context, p Partition, lower, upper time.Time) (int64, error) {
	var added int64
	ids := f.seen[p.ID]
	key := uuid.UUID(p.ID).String()
	err := readWindow(ctx, f.conn, p, lower, upper, func(page []Message) error {
		in := make([]broker.ImportMessage, 0, len(page))
		for i := range page {
			if _, dup := ids[page[i].ID]; dup {
				continue
			}
			m, err := importMessage(&page[i], f.key)
			if err != nil {
				return fmt.Errorf("queenimport: follow: queue %s partition %s message %s: %w", p.Queue, p.Name, uuid.UUID(page[i].ID), err)
			}
			in = append(in, m)
		}
		if len(in) > 0 {
			n, err := f.b.ImportMessages(p.Queue, p.Name, in)
			added += int64(n)
			if err != nil {
				return fmt.Errorf("queenimport: follow: queue %s partition %s: %w", p.Queue, p.Name, err)
			}
		}
		if ids == nil {
			ids = map[[16]byte]time.Time{}
			f.seen[p.ID] = ids
		}
		for i := range page {
			m := &page[i]
			ids[m.ID] = m.CreatedAt
			at := f.state.Partitions[key]
			if m.CreatedAt.After(at.CreatedAt) || m.CreatedAt.Equal(at.CreatedAt) && uuidLess(at.ID, m.ID) {
				f.state.Partitions[key] = PartitionState{CreatedAt: m.CreatedAt, ID: m.ID}
			}
		}
		return nil
	})
	return added, err
}

func uuidLess(a uuid.UUID, b [16]byte) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// Cutover is the last step of a live move, run once the operator has stopped Queen's
// consumers: a pass, then the snapshot import again from where each partition's copy stands
// (the messages up to the newest Queen holds, and every cursor, live lease, subscription and
// dead letter as Queen holds them now). Passes may go on afterwards, for producers still
// pushing to Queen. Errors: the pass's or the import's.
func (f *Follower) Cutover(ctx context.Context, opts Options) (Report, error) {
	n, err := f.Pass(ctx)
	if err != nil {
		return Report{}, err
	}
	opts.Key, opts.State = f.key, f.state
	rep, err := Import(ctx, f.conn, f.b, opts)
	rep.Messages += n
	return rep, err
}

// readDefinitions reads queues and partitions (no high-water marks, no counts: a pass asks
// for them every second) in one read-only transaction.
func readDefinitions(ctx context.Context, conn *pgx.Conn) ([]Queue, []Partition, error) {
	s := &Snapshot{}
	var parts []Partition
	err := pgx.BeginTxFunc(ctx, conn, readOnly, func(tx pgx.Tx) error {
		if err := readQueues(ctx, tx, s); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT p.id, q.name, p.name, coalesce(p.created_at, now())
			FROM queen.partitions p JOIN queen.queues q ON q.id = p.queue_id ORDER BY q.name, p.name`)
		if err != nil {
			return fmt.Errorf("partitions: %w", err)
		}
		parts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Partition, error) {
			var p Partition
			err := r.Scan(&p.ID, &p.Queue, &p.Name, &p.CreatedAt)
			return p, err
		})
		if err != nil {
			return fmt.Errorf("partitions: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("queenimport: follow: %w", err)
	}
	return s.Queues, parts, nil
}

// readWindow calls fn with p's messages created in [lower, upper), in (created_at, id)
// order, page by page (keyset pagination, one read-only transaction per page).
func readWindow(ctx context.Context, conn *pgx.Conn, p Partition, lower, upper time.Time, fn func([]Message) error) error {
	const cols = `SELECT id, transaction_id, coalesce(trace_id::text,''), payload::text, created_at,
		coalesce(is_encrypted,false), coalesce(producer_sub,'') FROM queen.messages
		WHERE partition_id = $1 AND created_at >= $2 AND created_at < $3 `
	const order = ` ORDER BY created_at, id LIMIT $4`
	query := func(first bool, afterTime time.Time, afterID [16]byte) (string, []any) {
		if first {
			return cols + order, []any{p.ID, lower, upper, PageSize}
		}
		return cols + `AND (created_at, id) > ($5, $6)` + order, []any{p.ID, lower, upper, PageSize, afterTime, afterID}
	}
	return readPages(ctx, conn, query, time.Time{}, [16]byte{}, fn,
		fmt.Sprintf("queenimport: follow: messages of queue %s partition %s", p.Queue, p.Name))
}
