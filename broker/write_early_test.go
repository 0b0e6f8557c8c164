package broker

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/cursor"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/lsn"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/vfs"
)

// popAnswer is one pop's answer.
type popAnswer struct {
	res PopResult
	err error
}

// popAnswerAsync runs b.Pop(req) in the background; the channel gets its answer.
func popAnswerAsync(b *Broker, req PopRequest) <-chan popAnswer {
	done := make(chan popAnswer, 1)
	go func() {
		r, err := b.Pop(context.Background(), req)
		done <- popAnswer{r, err}
	}()
	return done
}

// pushAsync pushes one message with transactionId txid to q/p in the
// background; the channel gets the answer.
func pushAsync(b *Broker, txid string) <-chan pushAnswer {
	done := make(chan pushAnswer, 1)
	go func() {
		res, err := b.Push([]PushItem{{Queue: "q", Partition: "p", TransactionID: txid, Payload: []byte(`"` + txid + `"`)}})
		done <- pushAnswer{res, err}
	}()
	return done
}

// waitForLease returns once group holds a lease on p (a pop claimed from it),
// failing the test if the pop answers first or nothing is claimed within 30 s
// (a deadline for a stuck test, not a timing assumption).
func waitForLease(t *testing.T, b *Broker, p *partition, group string, answer <-chan popAnswer) leasedSpan {
	t.Helper()
	k := cursor.Key{Partition: p.id, Group: group}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, ok := b.cur.Get(k) // safe without p.mu, which a transaction may hold while it waits
		if ok && st.Lease.Held() {
			return leasedSpan{start: st.Lease.Start, end: st.Lease.End}
		}
		select {
		case a := <-answer:
			t.Fatalf("the pop answered before it held a lease: %v %v", txids(a.res), a.err)
		default:
		}
		require.True(t, time.Now().Before(deadline), "no pop claimed from the partition")
		time.Sleep(time.Millisecond)
	}
}

type leasedSpan struct{ start, end uint64 }

// heldCommit holds the commit of pushes (Broker.hooks.pushCommit): the
// commit log makes their entries durable as usual, but the ticket the push
// waits on (own) and the one it leaves as the partition's tail, which a pop
// that claimed its records waits on, answer only once their open is
// called, with the log's answer or open's error.
type heldCommit struct{ own, tail heldTicket }

type heldTicket struct {
	waiting atomic.Int32 // callers blocked in Wait
	release chan struct{}
	err     error // set before release is closed
}

func newHeldCommit() *heldCommit {
	return &heldCommit{own: heldTicket{release: make(chan struct{})}, tail: heldTicket{release: make(chan struct{})}}
}

func (h *heldCommit) wrap(t walTicket) (own, tail walTicket) {
	return h.own.wrap(t), h.tail.wrap(t)
}

func (h *heldTicket) wrap(t walTicket) walTicket {
	return lsn.NewTicket(t.LSN, lsn.WaitFunc(func() error {
		h.waiting.Add(1)
		defer h.waiting.Add(-1)
		<-h.release
		if h.err != nil {
			return h.err
		}
		return t.Wait()
	}))
}

func (h *heldTicket) open(err error) {
	select {
	case <-h.release:
		return
	default:
	}
	h.err = err
	close(h.release)
}

// earlyScene is a broker on a fake clock whose queue q/p held one message,
// consumed, so that a pop of q finds nothing and parks; the next push's
// commit is held (hc).
type earlyScene struct {
	b  *Broker
	p  *partition
	hc *heldCommit
}

func newEarlyScene(t *testing.T) *earlyScene {
	b, _ := openOnFakeClock(t)
	_, err := b.Push([]PushItem{{Queue: "q", Partition: "p", TransactionID: "seed", Payload: []byte(`"seed"`)}})
	require.NoError(t, err)
	res, err := b.Pop(context.Background(), PopRequest{Queue: "q", Batch: 10, AutoAck: true})
	require.NoError(t, err)
	require.Equal(t, []string{"seed"}, txids(res))
	s := &earlyScene{b: b, p: b.lookupQueue("q").partition("p"), hc: newHeldCommit()}
	b.hooks.pushCommit = s.hc.wrap // before any goroutine that pushes
	t.Cleanup(func() {
		s.hc.own.open(errors.New("test over"))
		s.hc.tail.open(errors.New("test over"))
	})
	return s
}

// parkedPopClaims starts a long-poll of q, waits until it is parked, pushes
// X and returns once the woken pop holds its lease on X and both the push
// and the pop wait for X's held commit; nothing has answered.
func (s *earlyScene) parkedPopClaims(t *testing.T) (popped <-chan popAnswer, pushed <-chan pushAnswer) {
	t.Helper()
	popped = popAnswerAsync(s.b, PopRequest{Queue: "q", Batch: 10, Wait: true, Timeout: time.Minute})
	require.Eventually(t, func() bool { return s.b.stats.parkedPops.Load() == 1 }, 30*time.Second, time.Millisecond, "the pop never parked")
	pushed = pushAsync(s.b, "X")
	l := waitForLease(t, s.b, s.p, QueueModeGroup, popped)
	assert.Equal(t, leasedSpan{2, 2}, l, "the woken pop leased X (offset 2, after the seed) while its push's commit was held")
	require.Eventually(t, func() bool { return s.hc.own.waiting.Load() == 1 && s.hc.tail.waiting.Load() == 1 }, 30*time.Second, time.Millisecond,
		"the push and the pop do not both wait for X's commit")
	select {
	case a := <-popped:
		t.Fatalf("the pop answered before X's commit: %v %v", txids(a.res), a.err)
	case a := <-pushed:
		t.Fatalf("the push answered before its commit: %+v %v", a.res, a.err)
	default:
	}
	assert.Equal(t, uint64(2), s.p.visible.Load(), "X is not visible before its commit")
	return popped, pushed
}

// issue 23: a parked long-poll is woken by a push before the push's commit,
// claims its message, and answers only once that commit is durable; then X
// is visible (the pop raised the mark itself) and its ack resolves.
func TestWokenPopClaimsBeforeThePushCommitAndAnswersAfterIt(t *testing.T) {
	s := newEarlyScene(t)
	popped, pushed := s.parkedPopClaims(t)
	s.hc.tail.open(nil) // the push itself still waits: its publish comes later
	a := <-popped
	require.NoError(t, a.err)
	assert.Equal(t, []string{"X"}, txids(a.res))
	assert.Equal(t, uint64(3), s.p.visible.Load(), "the pop made X visible before it answered")
	acked, err := s.b.Ack(QueueModeGroup, []AckItem{{TransactionID: "X", PartitionID: s.p.idStr, Status: "completed", LeaseID: a.res.LeaseID}})
	require.NoError(t, err)
	require.Len(t, acked, 1)
	assert.True(t, acked[0].Success, "the ack of X, sent before X's push answered: %+v", acked[0])
	select {
	case p := <-pushed:
		t.Fatalf("the push answered before its own commit: %+v %v", p.res, p.err)
	default:
	}
	s.hc.own.open(nil)
	p := <-pushed
	require.NoError(t, p.err)
	assert.Equal(t, PushQueued, p.res[0].Status)
	assert.Equal(t, uint64(3), s.p.visible.Load())
}

// issue 23: when the commit of a push whose message a pop claimed early
// fails, the pop delivers nothing and leaves no claim: the group's state is
// what it was before the pop (committed past the seed, no lease), even
// though the pop's own checkpoint was durable.
func TestPopOfAPushWhoseCommitFailsDeliversNothingAndLeavesNoClaim(t *testing.T) {
	s := newEarlyScene(t)
	k := cursor.Key{Partition: s.p.id, Group: QueueModeGroup}
	before, ok := s.b.cur.Get(k)
	require.True(t, ok)
	popped, pushed := s.parkedPopClaims(t)
	boom := errors.New("commit failed")
	s.hc.tail.open(boom)
	s.hc.own.open(boom)
	a := <-popped
	require.ErrorIs(t, a.err, boom)
	assert.Empty(t, a.res.Messages)
	p := <-pushed
	require.ErrorIs(t, p.err, boom)
	s.p.mu.Lock()
	after, _ := s.b.cur.Get(k)
	s.p.mu.Unlock()
	assert.Equal(t, before, after, "the claim was put back")
	assert.False(t, after.Lease.Held())
	assert.Equal(t, uint64(2), s.p.visible.Load(), "nothing was published")
}

// issue 23, the power-loss side (the commit-log fdatasync itself held, as in
// the issue 21 scenes): a pop that claimed X while X's sync was held has not
// answered; a power loss now leaves neither X nor the claim; the sync
// failing then fails both the push and the pop.
func TestEarlyClaimIsLostWithItsPushAtAPowerLoss(t *testing.T) {
	mem, gate, clk := vfs.NewMem(), &syncGate{}, newTestClock()
	b, err := Open(Config{DataDir: "/data", FS: gatedFS{mem, "/data/commitlog/", gate}, Logger: zerolog.Nop(),
		Now: clk.Now, FlushInterval: time.Hour, MaintenanceInterval: -1, CommitLogFileBytes: 64 << 10})
	require.NoError(t, err)
	t.Cleanup(func() {
		gate.open(unix.EIO)
		b.Close()
	})
	_, err = b.Push([]PushItem{{Queue: "q", Partition: "p", TransactionID: "seed", Payload: []byte(`"seed"`)}})
	require.NoError(t, err)
	res, err := b.Pop(context.Background(), PopRequest{Queue: "q", Batch: 10, AutoAck: true})
	require.NoError(t, err)
	require.Equal(t, []string{"seed"}, txids(res))
	p := b.lookupQueue("q").partition("p")
	gate.arm()

	pushed := pushAsync(b, "X")
	popped := popAnswerAsync(b, PopRequest{Queue: "q", Batch: 10, Wait: true, Timeout: time.Minute})
	assert.Equal(t, leasedSpan{2, 2}, waitForLease(t, b, p, QueueModeGroup, popped))
	select {
	case a := <-popped:
		t.Fatalf("the pop answered while every commit-log sync was held: %v %v", txids(a.res), a.err)
	case a := <-pushed:
		t.Fatalf("the push answered while its sync was held: %+v %v", a.res, a.err)
	default:
	}

	crashed, err := Open(Config{DataDir: "/data", FS: mem.Crash(true), Logger: zerolog.Nop(), Now: clk.Now, MaintenanceInterval: -1})
	require.NoError(t, err)
	cp := crashed.lookupQueue("q").partition("p")
	assert.Equal(t, uint64(2), cp.log.NextOffset(), "X is not in the partition after the power loss")
	st, ok := crashed.cur.Get(cursor.Key{Partition: cp.id, Group: QueueModeGroup})
	require.True(t, ok)
	assert.Equal(t, uint64(1), st.Committed, "the seed's autoAck")
	assert.False(t, st.Lease.Held(), "the claim of X did not survive the power loss without X")
	require.NoError(t, crashed.Close())

	gate.open(unix.EIO)
	a := <-popped
	assert.Error(t, a.err)
	assert.Empty(t, a.res.Messages)
	pa := <-pushed
	assert.Error(t, pa.err)
}

// While push maintenance holds pushes (spec 1.8) nothing is exposed: a pop
// finds nothing and answers at once, though the push's commit is held.
func TestPushHeldByMaintenanceExposesNothing(t *testing.T) {
	s := newEarlyScene(t)
	_, err := s.b.SetPushMaintenance(true)
	require.NoError(t, err)
	pushed := pushAsync(s.b, "X")
	require.Eventually(t, func() bool { return s.hc.own.waiting.Load() == 1 }, 30*time.Second, time.Millisecond, "the push never waited for its commit")
	res, err := s.b.Pop(context.Background(), PopRequest{Queue: "q", Batch: 10})
	require.NoError(t, err)
	assert.Empty(t, txids(res))
	assert.Equal(t, uint64(2), s.p.claimable.Load(), "nothing exposed past the seed")
	s.hc.own.open(nil)
	a := <-pushed
	require.NoError(t, a.err)
	assert.Equal(t, PushBuffered, a.res[0].Status)
}

// A push exposed before push maintenance began (spec 1.8) may be claimed while its commit
// runs, and raises visible only after it: the maintenance file's mark for a held partition is
// what pops may already have seen, claimable included, so that a restart never hides again a
// message that was delivered and answered queued (found in review: the mark was visible alone).
func TestMaintenanceMarkCoversAnExposedPush(t *testing.T) {
	s := newEarlyScene(t)
	pushed := pushAsync(s.b, "X")
	require.Eventually(t, func() bool { return s.hc.own.waiting.Load() == 1 }, 30*time.Second, time.Millisecond, "the push never waited for its commit")
	require.Equal(t, uint64(2), s.p.visible.Load(), "X is not visible before its commit")
	require.Equal(t, uint64(3), s.p.claimable.Load(), "X is exposed")

	s.b.mm.mu.Lock()
	s.b.mm.held = map[*partition]uint64{s.p: 3}
	err := s.b.writeMaintLocked(true, false)
	s.b.mm.mu.Unlock()
	require.NoError(t, err)
	data, err := s.b.fs.ReadFile(filepath.Join(s.b.dir, layout.Meta, maintFile))
	require.NoError(t, err)
	m, err := meta.DecodeMaintenance(data)
	require.NoError(t, err)
	assert.Equal(t, uint64(3), m.Marks[s.p.id], "the mark covers X")

	s.hc.own.open(nil)
	a := <-pushed
	require.NoError(t, a.err)
	assert.Equal(t, PushQueued, a.res[0].Status)
}
