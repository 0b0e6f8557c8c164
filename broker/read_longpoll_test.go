package broker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newRealClockEnv is newEnv on the wall clock: for long-poll schedules, which
// run on real timers.
func newRealClockEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clk: newTestClock()}
	b, err := Open(Config{DataDir: e.dir, Sync: "never", Logger: zerolog.Nop(), WakeTick: time.Millisecond})
	require.NoError(t, err)
	e.b = b
	t.Cleanup(func() {
		if e.b != nil {
			e.b.Close()
		}
	})
	return e
}

// spec 3.9 + 3.6: a parked pop whose only pending message is held by
// delayedProcessing re-checks when it becomes visible, not at its next backoff
// step (the 100,100,100,200,400,800 ms schedule delivered a 1 s delay at 1.7 s).
func TestLongPollWakesWhenADelayedMessageBecomesVisible(t *testing.T) {
	cases := []struct {
		name string
		req  PopRequest
	}{
		{"wildcard pop", PopRequest{Queue: "dq", Group: "g"}},
		{"targeted pop", PopRequest{Queue: "dq", Partition: "p", Group: "g"}},
		{"discovery pop", PopRequest{Namespace: "ns", Group: "g"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newRealClockEnv(t)
			opts := DefaultQueueOptions()
			opts.DelayedProcessing = 1
			_, err := e.b.Configure(ConfigureRequest{Queue: "dq", Namespace: "ns", Options: opts})
			require.NoError(t, err)
			pushed := time.Now() // before the push reads the clock: the message is visible at >= pushed+1s
			res, err := e.b.Push([]PushItem{{Queue: "dq", Partition: "p", TransactionID: "late", Payload: []byte("1")}})
			require.NoError(t, err)
			require.Equal(t, PushQueued, res[0].Status)

			req := c.req
			req.Batch, req.Wait, req.Timeout = 10, true, 10*time.Second
			r, err := e.b.Pop(context.Background(), req)
			require.NoError(t, err)
			defer r.Release()
			took := time.Since(pushed)
			require.Equal(t, []string{"late"}, txids(r))
			assert.GreaterOrEqual(t, took, time.Second, "delayedProcessing is respected")
			assert.Less(t, took, 1600*time.Millisecond, "the backoff's 1.7 s step was not waited out (0.6 s of slack for a loaded CI machine)")
		})
	}
}

// spec 3.6: a parked pop whose client went away (its alive check says so)
// claims nothing when a push wakes it; the message goes to the next consumer.
func TestLongPollWhoseClientLeftClaimsNothing(t *testing.T) {
	e := newEnv(t)
	var gone atomic.Bool
	var checks atomic.Int64
	check := func() bool {
		checks.Add(1)
		return !gone.Load()
	}
	ctx := WithAliveCheck(context.Background(), check)
	done := make(chan PopResult, 1)
	go func() {
		r, err := e.b.Pop(ctx, PopRequest{Queue: "lp", Group: "g", Batch: 10, Wait: true, Timeout: time.Minute})
		assert.NoError(t, err)
		done <- r
	}()
	require.Eventually(t, func() bool { return e.b.View().Counters().ParkedPops == 1 }, 5*time.Second, time.Millisecond)
	// The client disconnects while parked. Wait until the pop has looked at its
	// client since then: a check that ran before the disconnect may be followed
	// by a claim (that window is inherent: the client can leave at any moment),
	// so pushing before the pop has seen the disconnect would test the timing,
	// not the rule.
	gone.Store(true)
	before := checks.Load() // a check counted after this read saw gone (it loads gone after counting)
	require.Eventually(t, func() bool { return checks.Load() > before }, 5*time.Second, time.Millisecond)
	e.push("lp", "", "m")
	select {
	case r := <-done:
		assert.Empty(t, r.Messages, "nothing is handed to a client that left")
	case <-time.After(5 * time.Second):
		t.Fatal("parked pop did not end after its client left")
	}
	r := e.pop(PopRequest{Queue: "lp", Group: "g"})
	assert.Equal(t, []string{"m"}, txids(r), "the message was not claimed by the dead pop")
	assert.Equal(t, int64(0), e.b.View().Counters().ParkedPops)
}
