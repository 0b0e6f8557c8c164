package broker

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/segment"
)

// A pooled hold is recycled by the first release of a hand-out only: a copy of a result
// released already (its gen is stale) must not recycle the hold again, even after the hold
// went to another pop, or two pops would share buffers.
func TestPopHoldReleasesOncePerHandOut(t *testing.T) {
	h := new(popHold)
	gen := h.gen.Load()
	h.bufs = append(h.bufs, new(segment.ReadBuffer))
	ms := append(h.messages(4), Message{ID: "a", Payload: []byte("x")})
	h.release(gen, ms)
	require.Equal(t, gen+1, h.gen.Load())
	assert.Empty(t, h.bufs)
	assert.Equal(t, Message{}, ms[0], "the released Messages pin nothing")

	// The hold's next hand-out, then the stale copy's release.
	next := h.gen.Load()
	rb := new(segment.ReadBuffer)
	h.bufs = append(h.bufs, rb)
	ms = append(h.messages(4), Message{ID: "b"})
	h.release(gen, ms)
	assert.Equal(t, next, h.gen.Load(), "a stale release changes nothing")
	assert.Equal(t, []*segment.ReadBuffer{rb}, h.bufs)
	assert.Equal(t, "b", ms[0].ID)
	h.release(next, ms)
	assert.Equal(t, next+1, h.gen.Load())
}

// The id text of several spans: each string keeps its bytes when the buffer grows.
func TestPopHoldIDsSurviveGrowth(t *testing.T) {
	h := new(popHold)
	one := []segment.Message{{Record: segment.Record{ID: [16]byte{1}}}}
	first := h.appendIDs(one)
	many := make([]segment.Message, 100)
	for i := range many {
		many[i].ID = [16]byte{2, byte(i)}
	}
	second := h.appendIDs(many)
	assert.Equal(t, uuidString([16]byte{1}), first)
	require.Len(t, second, 3600)
	assert.Equal(t, uuidString([16]byte{2, 99}), second[3564:])
}

// Pops through the pooled holds: a copy of a released result released again while the next
// pop holds what may be the same hold leaves that pop's ids and payloads intact.
func TestPopResultCopiesReleaseSafely(t *testing.T) {
	e := newEnv(t)
	e.push("holds", "", "m0", "m1", "m2")
	prev, err := e.b.Pop(t.Context(), PopRequest{Queue: "holds", Batch: 1, AutoAck: true})
	require.NoError(t, err)
	for _, want := range []string{"m1", "m2"} {
		stale := prev
		prev.Release()
		r, err := e.b.Pop(t.Context(), PopRequest{Queue: "holds", Batch: 1, AutoAck: true})
		require.NoError(t, err)
		require.Len(t, r.Messages, 1)
		id, payload := strings.Clone(r.Messages[0].ID), string(r.Messages[0].Payload)
		stale.Release() // released already: must not recycle r's hold
		r2, err := e.b.Pop(t.Context(), PopRequest{Queue: "other", Batch: 1, AutoAck: true})
		require.NoError(t, err)
		require.Empty(t, r2.Messages)
		assert.Equal(t, want, r.Messages[0].TransactionID)
		assert.Equal(t, `{"tx":"`+want+`"}`, payload)
		assert.Equal(t, payload, string(r.Messages[0].Payload))
		assert.Equal(t, id, r.Messages[0].ID)
		prev = r
	}
	prev.Release()
}
