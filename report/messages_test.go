package report

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

func (e *env) listed(f MessageFilter) []string {
	e.t.Helper()
	l, err := e.r.Messages(f)
	require.NoError(e.t, err)
	out := make([]string, len(l.Messages))
	for i, m := range l.Messages {
		out[i] = m.TransactionID
	}
	return out
}

// The messages list (spec 8.5) shows no expired message once a pop found
// them (maxWaitTimeSeconds, spec 2.2): they are gone, as Queen's deleted rows.
func TestExpiredMessagesAreNotListed(t *testing.T) {
	e := newEnv(t)
	opts := broker.DefaultQueueOptions()
	opts.MaxWaitTimeSeconds = 60
	_, err := e.b.Configure(broker.ConfigureRequest{Queue: "q", Options: opts})
	require.NoError(t, err)
	e.push("q", "p", "old1")
	e.push("q", "p", "old2")
	e.clk.Advance(2 * time.Minute)
	e.push("q", "p", "new")
	from := e.clk.Now().Add(-time.Hour).UnixMicro()
	assert.Equal(t, []string{"new", "old2", "old1"}, e.listed(MessageFilter{Queue: "q", FromMicros: from}), "not found yet, newest first")
	e.pop(broker.PopRequest{Queue: "q", Partition: "p", Group: "other"})
	assert.Equal(t, []string{"new"}, e.listed(MessageFilter{Queue: "q", FromMicros: from}))
}

// The list's status filter and page (spec 8.5): pending, processing under a
// live lease, completed at or before the cursor; limit and offset page the
// newest first.
func TestMessageListStatusAndPage(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p", "a", "b", "c", "d")
	res := e.pop(broker.PopRequest{Queue: "q", Partition: "p", Batch: 1})
	e.ack(broker.QueueModeGroup, res, "completed")                 // a
	e.pop(broker.PopRequest{Queue: "q", Partition: "p", Batch: 1}) // b leased
	cases := []struct {
		name string
		f    MessageFilter
		want []string
	}{
		{"every status, newest first", MessageFilter{Queue: "q"}, []string{"d", "c", "b", "a"}},
		{"completed: at or before the cursor", MessageFilter{Queue: "q", Status: StatusCompleted}, []string{"a"}},
		{"processing: under the live lease", MessageFilter{Queue: "q", Status: StatusProcessing}, []string{"b"}},
		{"pending", MessageFilter{Queue: "q", Status: StatusPending}, []string{"d", "c"}},
		{"limit and offset", MessageFilter{Queue: "q", Limit: 2, Offset: 1}, []string{"c", "b"}},
		{"an unknown status matches nothing", MessageFilter{Queue: "q", Status: "nope"}, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { assert.Equal(t, c.want, e.listed(c.f)) })
	}
	pid := e.partitionID("q", "p")
	d, err := e.r.Message(pid, "b")
	require.NoError(t, err)
	assert.Equal(t, StatusProcessing, d.Status)
	assert.Equal(t, `{"tx":"b"}`, string(d.Payload))
	_, err = e.r.Message(pid, "zz")
	assert.ErrorIs(t, err, broker.ErrNotFound)
}
