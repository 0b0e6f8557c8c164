package broker

import (
	"testing"
	"time"

	"github.com/combmq/comb/cursor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spec 7.5: the subscription timestamp of every record of the group changes;
// partitions born later start from it, existing cursors stay.
func TestSetSubscriptionTimestamp(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p1", "old")
	assert.Empty(t, e.pop(PopRequest{Queue: "q", Group: "g", SubscriptionMode: "new"}).Messages)
	e.pop(PopRequest{Queue: "other", Group: "g"}) // second record, mode all
	e.push("q", "p2", "born-later")
	e.clk.Advance(time.Second)
	cut := e.clk.Now()
	e.push("q", "p3", "after-cut")

	n, err := e.b.SetSubscriptionTimestamp("g", cut.UnixMicro())
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	n, err = e.b.SetSubscriptionTimestamp("nobody", cut.UnixMicro())
	require.NoError(t, err)
	assert.Equal(t, 0, n)

	s, ok := e.b.cur.Subscription("q", "g")
	require.True(t, ok)
	assert.Equal(t, cursor.SubNew, s.Mode)
	assert.Equal(t, cut.UnixMicro(), s.TimestampMicros)
	s, _ = e.b.cur.Subscription("other", "g")
	assert.Equal(t, cursor.SubTimestamp, s.Mode, "an all record takes the timestamp as a timestamp record")

	e.reopen() // the records are durable and the ready structures rebuilt
	got := txids(e.pop(PopRequest{Queue: "q", Group: "g", Partitions: 10, AutoAck: true}))
	assert.ElementsMatch(t, []string{"after-cut"}, got, "p2 and p3 had no cursor: both start at the new timestamp; p1's cursor stays at its end")
}
