package commitlog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/vfs"
)

// The decision itself (groupwait.go, "The rule"): when the committer waits
// and for how many callers.
func TestWaitTarget(t *testing.T) {
	const cap5 = 5 * time.Millisecond
	for _, c := range []struct {
		name   string
		max    time.Duration
		policy SyncPolicy
		peak   int64
		gap    time.Duration
		want   int64
	}{
		{"off: no cap", 0, SyncAlways, 16, time.Microsecond, 0},
		{"interval answers after the write: nothing to share", cap5, SyncInterval, 16, time.Microsecond, 0},
		{"never syncs: nothing to share", cap5, SyncNever, 16, time.Microsecond, 0},
		{"nobody waits", cap5, SyncAlways, 0, time.Microsecond, 0},
		{"a lone caller never waits", cap5, SyncAlways, 1, time.Microsecond, 0},
		{"callers too sparse for the cap to gather four", cap5, SyncAlways, 16, cap5/minGather + 1, 0},
		{"moderate load: 500 requests/s", cap5, SyncAlways, 3, 2 * time.Millisecond, 0},
		{"gap of exactly a quarter of the cap waits", cap5, SyncAlways, 16, cap5 / minGather, 16},
		{"two seen at once: wait for the second", cap5, SyncAlways, 2, 100 * time.Microsecond, 2},
		{"sixteen connections", cap5, SyncAlways, 16, 400 * time.Microsecond, 16},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, waitTarget(c.max, c.policy, c.peak, c.gap))
		})
	}
}

func TestWaitOver(t *testing.T) {
	const ms = time.Millisecond
	require.False(t, waitOver(3, 4, 1*ms, 2*ms), "short of the target, under the cap")
	require.True(t, waitOver(4, 4, 0, 2*ms), "target reached")
	require.True(t, waitOver(9, 4, 0, 2*ms), "more than the target")
	require.True(t, waitOver(1, 4, 2*ms, 2*ms), "the cap bounds the wait")
}

func TestNextGap(t *testing.T) {
	const ms = time.Millisecond
	require.Equal(t, 1*ms, nextGap(1*ms, 4*ms, 4), "4 callers in 4 ms: 1 ms apart, as before")
	require.Equal(t, 1750*time.Microsecond, nextGap(1*ms, 4*ms, 0), "no caller counts as one: the gap lengthens")
	require.Equal(t, (3*ms+gapClamp)/4, nextGap(1*ms, time.Hour, 1), "an idle hour is clamped")
	g := gapClamp
	for range 20 {
		g = nextGap(g, 4*ms, 16)
	}
	require.Less(t, g, 2*ms, "twenty busy groups bring the Open value down")
}

// A lone appender never waits, even with a cap no test could sit out.
func TestGroupWaitSkippedForLoneAppender(t *testing.T) {
	l, _ := open(t, vfs.NewMem(), Options{FileBytes: 1 << 20, GroupCommitWait: time.Hour})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= 200; i++ {
			appendWait(t, l, i)
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a lone appender waited for callers that never come")
	}
	st := l.GroupStats()
	// Waiters counts only the Waits that blocked (a batch synced before its
	// caller's Wait is not waited on): at most one a batch here.
	require.Equal(t, GroupStats{Groups: 200}, GroupStats{Groups: st.Groups, Waited: st.Waited, Capped: st.Capped})
	require.LessOrEqual(t, st.Waiters, uint64(200))
	require.NoError(t, l.Close())
}

// Seen load (peak 3, callers 1 µs apart) makes the committer wait for three
// callers; only one comes, and the cap ends the wait.
func TestGroupWaitBoundedByCap(t *testing.T) {
	const capWait = 30 * time.Millisecond
	l, _ := open(t, vfs.NewMem(), Options{FileBytes: 1 << 20, GroupCommitWait: capWait})
	// Written before the first Append, whose kick orders them before the
	// committer reads them.
	l.group.peak.Store(3)
	l.group.gap = time.Microsecond
	start := time.Now()
	appendWait(t, l, 1)
	require.Less(t, time.Since(start), 30*time.Second)
	st := l.GroupStats()
	require.Equal(t, uint64(1), st.Waited)
	require.Equal(t, uint64(1), st.Capped)
	require.GreaterOrEqual(t, st.WaitMicros, uint64(capWait.Microseconds()), "a timer never fires early")
	require.NoError(t, l.Close())
}

// The wait ends as soon as the expected callers wait on the batch: with a
// cap of an hour, two callers are answered together, from one batch.
func TestGroupWaitEndsAtTarget(t *testing.T) {
	l, _ := open(t, vfs.NewMem(), Options{FileBytes: 1 << 20, GroupCommitWait: time.Hour})
	l.group.peak.Store(2)
	l.group.gap = time.Microsecond
	tk1, err := l.Append(1, []byte("a"))
	require.NoError(t, err)
	errs := make(chan error, 2)
	go func() { errs <- tk1.Wait() }()
	tk2, err := l.Append(1, []byte("b"))
	require.NoError(t, err)
	go func() { errs <- tk2.Wait() }()
	for range 2 {
		select {
		case err := <-errs:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("the wait did not end when both callers waited")
		}
	}
	st := l.GroupStats()
	require.Equal(t, GroupStats{Groups: 1, Waited: 1, Waiters: 2}, GroupStats{Groups: st.Groups, Waited: st.Waited, Capped: st.Capped, Waiters: st.Waiters})
	require.NoError(t, l.Close())
}

// Close does not sit out the cap: the waiting batch is written at once.
func TestGroupWaitEndsAtClose(t *testing.T) {
	l, _ := open(t, vfs.NewMem(), Options{FileBytes: 1 << 20, GroupCommitWait: time.Hour})
	l.group.peak.Store(5)
	l.group.gap = time.Microsecond
	tk, err := l.Append(1, []byte("a"))
	require.NoError(t, err)
	waited := make(chan error, 1)
	go func() { waited <- tk.Wait() }()
	require.Eventually(t, func() bool { return l.group.lingering.Load() }, 30*time.Second, time.Millisecond)
	require.NoError(t, l.Close())
	select {
	case err := <-waited:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Close left the waiting batch unwritten")
	}
	require.Equal(t, uint64(1), l.GroupStats().Groups)
}

// An urgent entry (Options.Urgent) is never held: joining a batch the
// committer is gathering for, it ends the wait at once, cap of an hour or
// not, and the batch is not counted as capped.
func TestGroupWaitEndsAtAnUrgentEntry(t *testing.T) {
	const urgent = 7
	l, _ := open(t, vfs.NewMem(), Options{FileBytes: 1 << 20, GroupCommitWait: time.Hour,
		Urgent: func(kind byte) bool { return kind == urgent }})
	l.group.peak.Store(5)
	l.group.gap = time.Microsecond
	tk1, err := l.Append(1, []byte("push"))
	require.NoError(t, err)
	errs := make(chan error, 2)
	go func() { errs <- tk1.Wait() }()
	require.Eventually(t, func() bool { return l.group.lingering.Load() }, 30*time.Second, time.Millisecond, "the committer gathers for the push")
	tk2, err := l.Append(urgent, []byte("checkpoint"))
	require.NoError(t, err)
	go func() { errs <- tk2.Wait() }()
	for range 2 {
		select {
		case err := <-errs:
			require.NoError(t, err)
		case <-time.After(30 * time.Second):
			t.Fatal("the urgent entry did not end the wait")
		}
	}
	st := l.GroupStats()
	require.Equal(t, GroupStats{Groups: 1, Waited: 1}, GroupStats{Groups: st.Groups, Waited: st.Waited, Capped: st.Capped})

	// A batch that holds an urgent entry from the start is written without a wait.
	tk3, err := l.Append(urgent, []byte("checkpoint"))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- tk3.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("a batch holding an urgent entry was held")
	}
	require.Equal(t, uint64(1), l.GroupStats().Waited, "no second wait")
	require.NoError(t, l.Close())
}
