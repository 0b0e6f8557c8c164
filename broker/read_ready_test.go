package broker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testParts(n int) []*partition {
	out := make([]*partition, n)
	for i := range out {
		out[i] = &partition{name: string(rune('a' + i))}
	}
	return out
}

func TestGroupReadyOldestFirst(t *testing.T) {
	g := newGroupReady()
	ps := testParts(3)
	g.touch(ps[0], 30)
	g.touch(ps[1], 10)
	g.touch(ps[2], 20)
	var got []string
	for {
		p, _, ok := g.take(0, nil)
		if !ok {
			break
		}
		got = append(got, p.name)
	}
	assert.Equal(t, []string{"b", "c", "a"}, got, "seed 004: the oldest ready partition is handed out first")
}

func TestGroupReadyDeferredPromotedWhenDue(t *testing.T) {
	g := newGroupReady()
	ps := testParts(1)
	g.touch(ps[0], 5)
	p, seq, ok := g.take(0, nil)
	require.True(t, ok)
	g.finish(p, seq, verdictLater, 0, 100) // leased until 100
	_, _, ok = g.take(99, nil)
	assert.False(t, ok, "a leased partition is not a candidate before its expiry")
	p, _, ok = g.take(100, nil)
	require.True(t, ok, "an expired lease makes the partition a candidate again")
	assert.Equal(t, ps[0], p)
}

func TestGroupReadyTouchDuringClaimWins(t *testing.T) {
	g := newGroupReady()
	ps := testParts(1)
	g.touch(ps[0], 5)
	p, seq, _ := g.take(0, nil)
	g.touch(ps[0], 7) // a push lands while the pop is claiming
	g.finish(p, seq, verdictDone, 0, 0)
	_, _, ok := g.take(0, nil)
	assert.True(t, ok, "the push's touch is not lost by the pop's stale verdict")
}

func TestGroupReadyPushKeepsLeasedDeferred(t *testing.T) {
	g := newGroupReady()
	ps := testParts(1)
	g.touch(ps[0], 5)
	p, seq, _ := g.take(0, nil)
	g.finish(p, seq, verdictLater, 0, 100)
	g.pushed(ps[0], 50)
	_, _, ok := g.take(10, nil)
	assert.False(t, ok, "new messages wait behind the live lease")
	g.touch(ps[0], 50) // the lease was released by an ack
	_, _, ok = g.take(10, nil)
	assert.True(t, ok)
}

func TestGroupReadySkip(t *testing.T) {
	g := newGroupReady()
	ps := testParts(2)
	g.touch(ps[0], 1)
	g.touch(ps[1], 2)
	p, _, ok := g.take(0, map[*partition]bool{ps[0]: true})
	require.True(t, ok)
	assert.Equal(t, ps[1], p)
	p, _, ok = g.take(0, nil)
	require.True(t, ok)
	assert.Equal(t, ps[0], p, "a skipped entry stays ready")
}
