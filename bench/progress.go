package bench

import (
	"fmt"
	"io"
	"time"
)

// startProgress prints one status line a second to w (nil = none) until the returned stop is
// called. The line is rewritten in place with a carriage return.
func startProgress(w io.Writer, st *Stats, wl Workload) (stop func()) {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		start := time.Now()
		prev := st.Snapshot()
		for {
			select {
			case <-done:
				fmt.Fprintln(w)
				return
			case <-t.C:
			}
			cur := st.Snapshot()
			d := cur.At.Sub(prev.At)
			fmt.Fprintf(w, "\r[%4.0fs] %s: push %9.0f msg/s  consume %9.0f msg/s  requests %7.0f/s  errors %d   ",
				cur.At.Sub(start).Seconds(), wl, Rate(cur.Pushed-prev.Pushed, d), Rate(cur.Consumed-prev.Consumed, d),
				Rate(cur.Requests-prev.Requests, d), st.ErrorTotal())
			prev = cur
		}
	}()
	return func() { close(done); <-finished }
}
