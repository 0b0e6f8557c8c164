package ready

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSetOldestFirst(t *testing.T) {
	s := New[string]()
	s.Touch("a", 30)
	s.Touch("b", 10)
	s.Touch("c", 20)
	var got []string
	for {
		p, _, ok := s.Take(0, nil)
		if !ok {
			break
		}
		got = append(got, p)
	}
	assert.Equal(t, []string{"b", "c", "a"}, got, "seed 004: the oldest ready partition is handed out first")
}

func TestSetDeferredPromotedWhenDue(t *testing.T) {
	s := New[string]()
	s.Touch("a", 5)
	p, seq, ok := s.Take(0, nil)
	require.True(t, ok)
	s.Finish(p, seq, Later, 0, 100) // leased until 100
	_, _, ok = s.Take(99, nil)
	assert.False(t, ok, "a leased partition is not a candidate before its expiry")
	p, _, ok = s.Take(100, nil)
	require.True(t, ok, "an expired lease makes the partition a candidate again")
	assert.Equal(t, "a", p)
}

func TestSetTouchDuringClaimWins(t *testing.T) {
	s := New[string]()
	s.Touch("a", 5)
	p, seq, _ := s.Take(0, nil)
	s.Touch("a", 7) // a push lands while the pop is claiming
	s.Finish(p, seq, Done, 0, 0)
	_, _, ok := s.Take(0, nil)
	assert.True(t, ok, "the push's touch is not lost by the pop's stale verdict")
}

func TestSetPushKeepsLeasedDeferred(t *testing.T) {
	s := New[string]()
	s.Touch("a", 5)
	p, seq, _ := s.Take(0, nil)
	s.Finish(p, seq, Later, 0, 100)
	s.Pushed("a", 50)
	_, _, ok := s.Take(10, nil)
	assert.False(t, ok, "new messages wait behind the live lease")
	s.Touch("a", 50) // the lease was released by an ack
	_, _, ok = s.Take(10, nil)
	assert.True(t, ok)
}

func TestSetSkip(t *testing.T) {
	s := New[string]()
	s.Touch("a", 1)
	s.Touch("b", 2)
	p, _, ok := s.Take(0, map[string]bool{"a": true})
	require.True(t, ok)
	assert.Equal(t, "b", p)
	p, _, ok = s.Take(0, nil)
	require.True(t, ok)
	assert.Equal(t, "a", p, "a skipped entry stays ready")
}

func TestSetReleasedDropsDeferred(t *testing.T) {
	s := New[string]()
	s.Defer("a", 5, 100) // leased until 100 at the initial scan
	assert.Equal(t, int64(100), s.NextDeferred())
	s.Released("a")
	assert.Equal(t, int64(0), s.NextDeferred(), "a released lease drops the deferred entry")
	s.Pushed("a", 50)
	p, _, ok := s.Take(10, nil)
	require.True(t, ok, "the next push makes the partition a candidate at once")
	assert.Equal(t, "a", p)
}

func TestSetPeek(t *testing.T) {
	s := New[string]()
	assert.Equal(t, "", s.Peek(), "an empty set peeks the zero member")
	_, ok := s.PeekKey(0)
	assert.False(t, ok)
	s.Add("a", 20)
	s.Add("b", 10)
	s.Defer("c", 5, 50)
	assert.Equal(t, "b", s.Peek())
	k, ok := s.PeekKey(0)
	require.True(t, ok)
	assert.Equal(t, int64(10), k, "the oldest ready entry's key")
	for range 2 {
		_, _, ok := s.Take(0, nil)
		require.True(t, ok)
	}
	k, ok = s.PeekKey(50)
	require.True(t, ok, "a deferred entry due now counts")
	assert.Equal(t, int64(5), k)
	_, ok = s.PeekKey(49)
	assert.False(t, ok, "a deferred entry not yet due does not")
}

func TestSetFinishAgainAndDone(t *testing.T) {
	s := New[string]()
	s.Touch("a", 5)
	p, seq, _ := s.Take(0, nil)
	s.Finish(p, seq, Again, 9, 0)
	k, ok := s.PeekKey(0)
	require.True(t, ok, "Again puts the member back ready")
	assert.Equal(t, int64(9), k, "with the key the pop gave")
	p, seq, _ = s.Take(0, nil)
	s.Finish(p, seq, Done, 0, 0)
	_, _, ok = s.Take(1<<62, nil)
	assert.False(t, ok, "Done drops the entry")
}
