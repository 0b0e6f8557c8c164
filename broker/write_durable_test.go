package broker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/lsn"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/vfs"
)

// syncGate holds every Sync of the files it guards while it is armed, until
// open lets them through (failing them with the error open was given, as a
// disk that fails its writeback would).
type syncGate struct {
	mu      sync.Mutex
	armed   bool
	release chan struct{}
	err     error
}

func (g *syncGate) arm() {
	g.mu.Lock()
	g.armed, g.release = true, make(chan struct{})
	g.mu.Unlock()
}

func (g *syncGate) open(err error) {
	g.mu.Lock()
	if g.armed {
		g.armed, g.err = false, err
		close(g.release)
	}
	g.mu.Unlock()
}

func (g *syncGate) wait() error {
	g.mu.Lock()
	armed, ch := g.armed, g.release
	g.mu.Unlock()
	if armed {
		<-ch
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// gatedFS is an FS whose files under dir sync only through gate.
type gatedFS struct {
	vfs.FS
	dir  string
	gate *syncGate
}

func (f gatedFS) OpenFile(name string, flag int) (vfs.File, error) {
	h, err := f.FS.OpenFile(name, flag)
	if err != nil || !strings.HasPrefix(name, f.dir) {
		return h, err
	}
	return gatedFile{h, f.gate}, nil
}

type gatedFile struct {
	vfs.File
	gate *syncGate
}

func (h gatedFile) Sync() error {
	if err := h.gate.wait(); err != nil {
		return err
	}
	return h.File.Sync()
}

// countedWait counts the callers blocked in its ticket's Wait.
type countedWait struct {
	t       walTicket
	waiting *atomic.Int32
}

func (w countedWait) Wait() error {
	w.waiting.Add(1)
	defer w.waiting.Add(-1)
	return w.t.Wait()
}

// dupScene is issue 21's first finding in a test: a push of X is stuck in
// its commit-log fdatasync (the gate), and a second caller repeats X.
type dupScene struct {
	t       *testing.T
	mem     *vfs.Mem
	gate    *syncGate
	clk     *testClock
	b       *Broker
	p       *partition // q/p, where X goes
	first   chan pushAnswer
	waiting atomic.Int32 // callers blocked on X's ticket through the partition's tail
	src     string       // the stream scene's source partition id
	qid     string       // its query id
}

type pushAnswer struct {
	res []PushResult
	err error
}

func newDupScene(t *testing.T) *dupScene {
	s := &dupScene{t: t, mem: vfs.NewMem(), gate: &syncGate{}, clk: newTestClock()}
	var err error
	s.b, err = Open(Config{DataDir: "/data", FS: gatedFS{s.mem, "/data/commitlog/", s.gate}, Logger: zerolog.Nop(),
		Now: s.clk.Now, FlushInterval: time.Hour, MaintenanceInterval: -1, CommitLogFileBytes: 64 << 10})
	require.NoError(t, err)
	t.Cleanup(func() {
		s.gate.open(unix.EIO)
		s.b.Close()
	})
	// Before the gate: the queues, partitions, the stream query and a
	// seed message, all durable; the seed is consumed so that a pop of the
	// queue finds nothing and writes nothing.
	s.push("seed")
	_, err = s.b.Push([]PushItem{{Queue: "src", Partition: "s", TransactionID: "in", Payload: []byte("1")}})
	require.NoError(t, err)
	s.qid = register(t, s.b, "dupq", "src", "sink", "h", false).QueryID
	s.src = s.b.lookupQueue("src").partition("s").idStr
	popped, err := s.b.Pop(context.Background(), PopRequest{Queue: "q", Batch: 10, AutoAck: true})
	require.NoError(t, err)
	require.Equal(t, []string{"seed"}, txids(popped))
	s.p = s.b.lookupQueue("q").partition("p")
	s.gate.arm()
	return s
}

func (s *dupScene) push(txid string) []PushResult {
	s.t.Helper()
	res, err := s.b.Push([]PushItem{{Queue: "q", Partition: "p", TransactionID: txid, Payload: []byte(`"` + txid + `"`)}})
	require.NoError(s.t, err)
	return res
}

// pushFirst pushes X in the background and returns once X is in the log and
// its commit-log entry is the partition's tail (it cannot be durable: every
// commit-log sync is held). The tail is replaced by one that counts its
// waiters.
func (s *dupScene) pushFirst() {
	s.first = make(chan pushAnswer, 1)
	before := s.tail()
	go func() {
		res, err := s.b.Push([]PushItem{{Queue: "q", Partition: "p", TransactionID: "X", Payload: []byte(`"X"`)}})
		s.first <- pushAnswer{res, err}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.p.mu.Lock()
		if s.p.tail.Appended() && (!before.Appended() || s.p.tail.LSN > before.LSN) {
			s.p.tail = lsn.NewTicket(s.p.tail.LSN, countedWait{s.p.tail, &s.waiting})
			s.p.mu.Unlock()
			return
		}
		s.p.mu.Unlock()
		select {
		case a := <-s.first:
			s.t.Fatalf("the first push of X answered while its commit was held: %+v %v", a.res, a.err)
		default:
		}
		require.True(s.t, time.Now().Before(deadline), "the first push of X never appended")
		time.Sleep(time.Millisecond)
	}
}

func (s *dupScene) tail() walTicket {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	return s.p.tail
}

// second runs the repeat of X in the background and returns once it waits
// for X's ticket; answered is where its answer arrives.
func (s *dupScene) second(repeat func() (any, error)) (answered chan pushAnswerAny) {
	answered = make(chan pushAnswerAny, 1)
	go func() {
		v, err := repeat()
		answered <- pushAnswerAny{v, err}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for s.waiting.Load() == 0 {
		select {
		case a := <-answered:
			s.t.Fatalf("the repeat of X answered before X was durable: %+v %v", a.v, a.err)
		default:
		}
		require.True(s.t, time.Now().Before(deadline), "the repeat of X never waited for X's commit")
		time.Sleep(time.Millisecond)
	}
	return answered
}

type pushAnswerAny struct {
	v   any
	err error
}

// unseen checks that nothing shows X while it is not durable: the message
// list and the counts; a pop may claim X (its push exposed it when its entry
// was appended, write_early.go) but must not answer while X's commit is held.
// With claims, it returns once that pop holds its lease on X (a transaction
// or a stream cycle waits for X holding the partition lock, txWaitDuplicates,
// and the pop waits for that lock); probe is where its answer arrives once
// the commit is let through or fails.
func (s *dupScene) unseen(answered chan pushAnswerAny, claims bool) (probe <-chan popAnswer) {
	s.t.Helper()
	list, err := listedTxids(s.b, "q")
	require.NoError(s.t, err)
	assert.Equal(s.t, []string{"seed"}, list)
	assert.Equal(s.t, int64(1), int64(s.p.visible.Load()-s.p.liveFrom()))
	probe = popAnswerAsync(s.b, PopRequest{Queue: "q", Batch: 10})
	if claims {
		waitForLease(s.t, s.b, s.p, QueueModeGroup, probe)
	}
	select {
	case a := <-answered:
		s.t.Fatalf("the repeat of X answered before X was durable: %+v %v", a.v, a.err)
	case a := <-s.first:
		s.t.Fatalf("the first push of X answered before X was durable: %+v %v", a.res, a.err)
	case a := <-probe:
		s.t.Fatalf("a pop answered X before X was durable: %v %v", txids(a.res), a.err)
	default:
	}
	return probe
}

// crashed opens what a power loss now would leave, and checks that X is not
// there (nor in the dedup index: a new push of X is queued), the seed is,
// once.
func (s *dupScene) crashedWithoutX() {
	s.t.Helper()
	b, err := Open(Config{DataDir: "/data", FS: s.mem.Crash(true), Logger: zerolog.Nop(), Now: s.clk.Now, MaintenanceInterval: -1})
	require.NoError(s.t, err)
	defer b.Close()
	list, err := listedTxids(b, "q")
	require.NoError(s.t, err)
	assert.Equal(s.t, []string{"seed"}, list)
	res, err := b.Pop(context.Background(), PopRequest{Queue: "q", Group: "check", Batch: 10, AutoAck: true})
	require.NoError(s.t, err)
	assert.Equal(s.t, []string{"seed"}, txids(res))
	again, err := b.Push([]PushItem{{Queue: "q", Partition: "p", TransactionID: "X", Payload: []byte(`"X"`)}})
	require.NoError(s.t, err)
	assert.Equal(s.t, PushQueued, again[0].Status)
}

// crashedWithX is the other outcome: the commit went through before the
// power loss, and X is there exactly once.
func (s *dupScene) crashedWithX() {
	s.t.Helper()
	b, err := Open(Config{DataDir: "/data", FS: s.mem.Crash(true), Logger: zerolog.Nop(), Now: s.clk.Now, MaintenanceInterval: -1})
	require.NoError(s.t, err)
	defer b.Close()
	res, err := b.Pop(context.Background(), PopRequest{Queue: "q", Group: "check", Batch: 10, AutoAck: true})
	require.NoError(s.t, err)
	assert.Equal(s.t, []string{"seed", "X"}, txids(res))
}

// The three ways a repeat of X arrives: /push, /transaction, a stream
// cycle's sink push. dup says whether its answer names X as a duplicate.
var dupRepeats = []struct {
	name   string
	repeat func(s *dupScene) (any, error)
	dup    func(t *testing.T, v any) string // the message id it answered
}{
	{"push", func(s *dupScene) (any, error) {
		return s.b.Push([]PushItem{{Queue: "q", Partition: "p", TransactionID: "X", Payload: []byte(`"X again"`)}})
	}, func(t *testing.T, v any) string {
		res := v.([]PushResult)
		require.Len(t, res, 1)
		assert.Equal(t, PushDuplicate, res[0].Status)
		return res[0].MessageID
	}},
	{"transaction", func(s *dupScene) (any, error) {
		return s.b.Transaction([]TxOp{{Type: "push", Push: PushItem{Queue: "q", Partition: "p", TransactionID: "X", Payload: []byte(`"X again"`)}}})
	}, func(t *testing.T, v any) string {
		res := v.(TxResult)
		require.True(t, res.Success, res.Error)
		require.Len(t, res.Results, 1)
		assert.True(t, res.Results[0].Duplicate)
		return res.Results[0].MessageID
	}},
	{"stream cycle", func(s *dupScene) (any, error) {
		return s.b.StreamCycle(StreamCycleRequest{QueryID: s.qid, PartitionID: s.src,
			Push: []PushItem{{Queue: "q", Partition: "p", TransactionID: "X", Payload: []byte(`"X again"`)}}})
	}, func(t *testing.T, v any) string {
		res := v.(StreamCycleResult)
		require.True(t, res.Success, res.Error)
		require.Len(t, res.PushResults, 1)
		assert.Equal(t, PushDuplicate, res.PushResults[0].Status)
		return res.PushResults[0].MessageID
	}},
}

// issue 21 #1: a repeat of X while X's commit is held is not answered, and
// nothing shows X; a power loss then leaves no X, and neither caller was
// told it is stored (the held sync fails, as the process that died would
// never have answered).
func TestDuplicateOfUndurableWaitsAndCrashLosesBoth(t *testing.T) {
	for _, c := range dupRepeats {
		t.Run(c.name, func(t *testing.T) {
			s := newDupScene(t)
			s.pushFirst()
			answered := s.second(func() (any, error) { return c.repeat(s) })
			probe := s.unseen(answered, c.name == "push")
			s.crashedWithoutX()
			s.gate.open(unix.EIO)
			first := <-s.first
			assert.Error(t, first.err, "the first push of X was answered %+v", first.res)
			second := <-answered
			assert.Error(t, second.err, "the repeat of X was answered %+v", second.v)
			popped := <-probe
			assert.Error(t, popped.err, "the pop that claimed X answered %v", txids(popped.res))
			assert.Empty(t, popped.res.Messages)
		})
	}
}

// issue 21 #1, the commit going through: both callers are answered once X
// is durable, the repeat as a duplicate of X's id; X is listed, popped and
// kept across a power loss exactly once.
func TestDuplicateOfUndurableAnswersOnceDurable(t *testing.T) {
	for _, c := range dupRepeats {
		t.Run(c.name, func(t *testing.T) {
			s := newDupScene(t)
			s.pushFirst()
			answered := s.second(func() (any, error) { return c.repeat(s) })
			probe := s.unseen(answered, c.name == "push")
			s.gate.open(nil)
			first := <-s.first
			require.NoError(t, first.err)
			require.Len(t, first.res, 1)
			assert.Equal(t, PushQueued, first.res[0].Status)
			second := <-answered
			require.NoError(t, second.err)
			assert.Equal(t, first.res[0].MessageID, c.dup(t, second.v))

			list, err := listedTxids(s.b, "q")
			require.NoError(t, err)
			assert.Equal(t, []string{"X", "seed"}, list, "newest first")
			popped := <-probe
			require.NoError(t, popped.err)
			assert.Equal(t, []string{"X"}, txids(popped.res), "the pop that claimed X while it synced")
			res, err := s.b.Pop(context.Background(), PopRequest{Queue: "q", Batch: 10, AutoAck: true})
			require.NoError(t, err)
			assert.Empty(t, txids(res), "X is leased to that pop")
			s.crashedWithX()
		})
	}
}

// A duplicate of a published message waits for nothing: a retried push
// answers while another push's commit to the same partition is held.
func TestDuplicateOfPublishedWaitsForNothing(t *testing.T) {
	s := newDupScene(t)
	s.pushFirst()
	res, err := s.b.Push([]PushItem{{Queue: "q", Partition: "p", TransactionID: "seed", Payload: []byte(`"again"`)}})
	require.NoError(t, err)
	assert.Equal(t, PushDuplicate, res[0].Status)
	assert.Equal(t, int32(0), s.waiting.Load())
	tx, err := s.b.Transaction([]TxOp{{Type: "push", Push: PushItem{Queue: "q", Partition: "p", TransactionID: "seed"}}})
	require.NoError(t, err)
	require.True(t, tx.Success, tx.Error)
	assert.True(t, tx.Results[0].Duplicate)
}

// A record in a partition's log that no commit-log entry covers (the append
// of its entry failed) is never answered as stored by a duplicate.
func TestDuplicateOfUncoveredRecordFails(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p", "a")
	p := e.b.lookupQueue("q").partition("p")
	_, err := p.log.Append(e.clk.Now().UnixMicro(), []segment.Record{{ID: newV7(), TransactionID: "b", Payload: []byte("1")}})
	require.NoError(t, err)
	cause := errors.New("no entry")
	p.mu.Lock()
	p.tail = failedTicket(cause)
	p.mu.Unlock()
	_, err = e.b.Push([]PushItem{{Queue: "q", Partition: "p", TransactionID: "b"}})
	require.ErrorIs(t, err, cause)
	_, err = e.b.Transaction([]TxOp{{Type: "push", Push: PushItem{Queue: "q", Partition: "p", TransactionID: "b"}}})
	require.ErrorIs(t, err, cause)
	res, err := e.b.Push([]PushItem{{Queue: "q", Partition: "p", TransactionID: "a"}})
	require.NoError(t, err, "a published record is still answered")
	assert.Equal(t, PushDuplicate, res[0].Status)
}
