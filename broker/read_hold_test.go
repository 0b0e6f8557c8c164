package broker

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/segment"
)

// A hold is recycled by the first release of a hand-out only: a copy of a result released
// already carries a stale gen, and its release must change nothing, even once the hold went
// to another pop, or two pops would share buffers. (The hold here never enters the pool: a
// test that pooled it and went on using it would hand one hold to two pops.)
func TestPopHoldStaleReleaseChangesNothing(t *testing.T) {
	h := new(popHold)
	h.gen.Store(5) // handed out at 5, after four releases
	rb := new(segment.ReadBuffer)
	h.bufs = append(h.bufs, rb)
	ms := append(h.messages(4), Message{ID: "b", Payload: []byte("x")})
	h.release(4, ms)
	assert.Equal(t, uint64(5), h.gen.Load())
	assert.Equal(t, []*segment.ReadBuffer{rb}, h.bufs)
	assert.Equal(t, "b", ms[0].ID)
	assert.Equal(t, "x", string(ms[0].Payload))
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
