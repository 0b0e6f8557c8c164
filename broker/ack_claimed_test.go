package broker

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/lease"
)

// The transaction ids a pop leased answer its ack (ack_claimed.go): the same
// offsets as reading the span, in any order, and the entry and its bytes go
// once the ack releases the lease.
func TestAckResolvesFromClaimedSpan(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p", "a", "b", "c", "d", "e")
	res := e.pop(PopRequest{Queue: "q", Group: "g", Batch: 4})
	require.Equal(t, []string{"a", "b", "c", "d"}, txids(res))
	p := e.b.lookupQueue("q").partition("p")

	k := cursorKey(e, "q", "p", "g")
	p.mu.Lock()
	st, _ := e.b.cur.Get(k)
	acks := []lease.Ack{{Index: 0}, {Index: 1}, {Index: 2}, {Index: 3}, {Index: 4}}
	names := []string{"c", "a", "b", "e", "d"} // out of order; e is not in the span
	rest := resolveClaimedLocked(p, "g", acks, func(i int) string { return names[i] }, st.Lease)
	p.mu.Unlock()
	assert.Equal(t, []int{3}, rest, "only e (outside the lease) is left for the read")
	want := map[string]uint64{}
	for _, m := range res.Messages {
		want[m.TransactionID] = m.Offset
	}
	for j, a := range acks {
		if j == 3 {
			continue
		}
		assert.Equal(t, want[names[j]], a.Offset, names[j])
	}
	require.Positive(t, e.b.claimed.used.Load())

	// Another group holds nothing; the whole batch goes to the read.
	p.mu.Lock()
	rest = resolveClaimedLocked(p, "other", acks[:2], func(i int) string { return names[i] }, st.Lease)
	p.mu.Unlock()
	assert.Equal(t, []int{0, 1}, rest)

	out := e.ack("g", res, "completed")
	for _, r := range out {
		require.True(t, r.Success, r.Error)
	}
	assert.Zero(t, e.b.claimed.used.Load(), "released lease: entry dropped")
	p.mu.Lock()
	assert.Nil(t, p.claimedForLocked("g"))
	p.mu.Unlock()

	// The next pop gets e: the cursor moved past d.
	assert.Equal(t, []string{"e"}, txids(e.pop(PopRequest{Queue: "q", Group: "g"})))
}

// A partial ack keeps the entry (the lease is still held); an autoAck pop
// keeps none; the budget refuses entries past claimedBudgetBytes.
func TestClaimedSpanLifetime(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p", "a", "b", "c")
	res := e.pop(PopRequest{Queue: "q", Group: "g"})
	e.ack("g", res, "completed", "a")
	p := e.b.lookupQueue("q").partition("p")
	p.mu.Lock()
	assert.NotNil(t, p.claimedForLocked("g"))
	p.mu.Unlock()
	out := e.ack("g", res, "completed", "b", "c")
	for _, r := range out {
		require.True(t, r.Success, r.Error)
	}
	assert.Zero(t, e.b.claimed.used.Load())

	e.push("q", "p", "d")
	e.pop(PopRequest{Queue: "q", Group: "h", AutoAck: true})
	assert.Zero(t, e.b.claimed.used.Load(), "autoAck leases nothing")

	e.b.claimed.used.Store(claimedBudgetBytes)
	e.push("q", "p", "e")
	res = e.pop(PopRequest{Queue: "q", Group: "g"})
	require.Equal(t, []string{"d", "e"}, txids(res))
	p.mu.Lock()
	assert.Nil(t, p.claimedForLocked("g"), "over budget: nothing kept")
	p.mu.Unlock()
	out = e.ack("g", res, "completed")
	for _, r := range out {
		require.True(t, r.Success, r.Error)
	}
	assert.Equal(t, int64(claimedBudgetBytes), e.b.claimed.used.Load())
}
