package broker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/combmq/comb/clock/clocktest"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openOnFakeClock opens a broker whose readings and long-poll waits all run
// on the returned clock.Fake, which moves only when the test moves it.
func openOnFakeClock(t *testing.T) (*Broker, *clocktest.Fake) {
	t.Helper()
	fk := clocktest.NewFake(time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC))
	b, err := Open(Config{DataDir: t.TempDir(), Sync: "never", Clock: fk, Logger: zerolog.Nop(), WakeTick: time.Millisecond, MaintenanceInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return b, fk
}

// popAsync runs b.Pop(req) in the background; the channel gets its result.
func popAsync(t *testing.T, b *Broker, req PopRequest) <-chan PopResult {
	done := make(chan PopResult, 1)
	go func() {
		r, err := b.Pop(context.Background(), req)
		assert.NoError(t, err)
		done <- r
	}()
	return done
}

// parkSchedule drives a parked pop on fk: it waits (on fk.Changed, not by
// sleeping) until the pop arms its next timer, moves fk to that timer's due
// time, and repeats until the pop answers. It returns each timer's due time
// as an offset from start, and the answer.
func parkSchedule(t *testing.T, fk *clocktest.Fake, start time.Time, done <-chan PopResult) ([]time.Duration, PopResult) {
	t.Helper()
	var dues []time.Duration
	giveUp := time.After(30 * time.Second) // a stuck pop fails the test instead of hanging it
	for {
		changed := fk.Changed()
		if p := fk.Pending(); len(p) > 0 {
			require.Len(t, p, 1, "a parked pop waits on one timer")
			dues = append(dues, p[0].Sub(start))
			fk.Set(p[0])
			continue
		}
		select {
		case <-changed:
		case r := <-done:
			return dues, r
		case <-giveUp:
			t.Fatalf("the pop neither armed a timer nor answered; timers so far at %v", dues)
		}
	}
}

// spec 3.9 + 3.6: a parked pop whose only pending message is held by
// delayedProcessing re-checks when it becomes visible, not at its next backoff
// step (the 100,100,100,200,400,800 ms schedule delivered a 1 s delay at 1.7 s).
// On the broker's clock, exactly: re-checks at 100, 200, 300, 500 and 900 ms,
// then at 1 s, where the 800 ms step is cut to the message's visibility.
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
			b, fk := openOnFakeClock(t)
			opts := DefaultQueueOptions()
			opts.DelayedProcessing = 1
			_, err := b.Configure(ConfigureRequest{Queue: "dq", Namespace: "ns", Options: opts})
			require.NoError(t, err)
			pushed := fk.Now() // the message is visible from pushed+1s on
			res, err := b.Push([]PushItem{{Queue: "dq", Partition: "p", TransactionID: "late", Payload: []byte("1")}})
			require.NoError(t, err)
			require.Equal(t, PushQueued, res[0].Status)

			req := c.req
			req.Batch, req.Wait, req.Timeout = 10, true, 10*time.Second
			dues, r := parkSchedule(t, fk, pushed, popAsync(t, b, req))
			defer r.Release()
			ms := time.Millisecond
			require.Equal(t, []time.Duration{100 * ms, 200 * ms, 300 * ms, 500 * ms, 900 * ms, time.Second}, dues)
			require.Equal(t, []string{"late"}, txids(r))
			require.Equal(t, pushed.Add(time.Second), fk.Now(), "answered the instant the message became visible")
		})
	}
}

// spec 3.6: a long-poll that finds nothing answers empty at its timeout: the
// backoff step that would end after it (100 ms from 200 ms, for a 250 ms
// timeout) waits exactly until the deadline, not a step longer.
func TestLongPollLastBackoffStepEndsAtTheDeadline(t *testing.T) {
	b, fk := openOnFakeClock(t)
	_, err := b.Configure(ConfigureRequest{Queue: "lp", Options: DefaultQueueOptions()})
	require.NoError(t, err)
	start := fk.Now()
	dues, r := parkSchedule(t, fk, start, popAsync(t, b, PopRequest{Queue: "lp", Group: "g", Batch: 10, Wait: true, Timeout: 250 * time.Millisecond}))
	ms := time.Millisecond
	require.Equal(t, []time.Duration{100 * ms, 200 * ms, 250 * ms}, dues)
	require.Empty(t, r.Messages)
	require.Equal(t, start.Add(250*ms), fk.Now())
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
