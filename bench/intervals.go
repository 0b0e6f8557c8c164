package bench

import (
	"context"
	"time"
)

// Interval is one slice of a long window (--interval): a sustained run's rate and server cost
// over time, so a rate that falls after a few minutes (issue 23: the handle cache's cliff two
// minutes into a push) shows instead of averaging away.
type Interval struct {
	StartSec  float64 `json:"startSec"` // since the window opened
	Sec       float64 `json:"sec"`      // its length
	MsgPerSec float64 `json:"msgPerSec"`
	// ServerCPUMicrosPerRequest and ServerRssBytes as in Result, over this interval and at its
	// end; absent without a server process.
	ServerCPUMicrosPerRequest float64 `json:"serverCpuMicrosPerRequest,omitempty"`
	ServerRssBytes            int64   `json:"serverRssBytes,omitempty"`
	// ServerAnonRssBytes and ServerFileRssBytes split ServerRssBytes (ProcSample).
	ServerAnonRssBytes int64 `json:"serverAnonRssBytes,omitempty"`
	ServerFileRssBytes int64 `json:"serverFileRssBytes,omitempty"`
}

// sampleIntervals records an Interval every every from its call (the window's open) until ctx
// ends, and sends the list when it does; a last interval shorter than 90 % of every is
// dropped. count reads the window's main counter (pushed or consumed messages) and requests;
// the server's CPU comes from /proc/serverPID (0 = none).
func sampleIntervals(ctx context.Context, every time.Duration, serverPID int, count func() (msgs, requests int64)) <-chan []Interval {
	out := make(chan []Interval, 1)
	go func() {
		var list []Interval
		defer func() { out <- list }()
		start := time.Now()
		prevAt := start
		prevMsgs, prevReqs := count()
		var prevSv ProcSample
		svOK := false
		if serverPID > 0 {
			var err error
			prevSv, err = ReadProc(serverPID)
			svOK = err == nil
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			final := false
			select {
			case <-ctx.Done():
				// The window's end races the last tick: an interval at least 90 % long counts.
				if time.Since(prevAt) < every*9/10 {
					return
				}
				final = true
			case <-t.C:
			}
			now := time.Now()
			msgs, reqs := count()
			iv := Interval{StartSec: prevAt.Sub(start).Seconds(), Sec: now.Sub(prevAt).Seconds(),
				MsgPerSec: Rate(msgs-prevMsgs, now.Sub(prevAt))}
			if svOK {
				if sv, err := ReadProc(serverPID); err == nil {
					iv.ServerCPUMicrosPerRequest = CPUMicrosPer(prevSv, sv, reqs-prevReqs)
					iv.ServerRssBytes = sv.RSSBytes
					iv.ServerAnonRssBytes, iv.ServerFileRssBytes = sv.AnonRSSBytes, sv.FileRSSBytes
					prevSv = sv
				}
			}
			list = append(list, iv)
			prevAt, prevMsgs, prevReqs = now, msgs, reqs
			if final {
				return
			}
		}
	}()
	return out
}

// holdRatios are the last interval's rate over the first's (≥ 0.9 is issue 23's "holds its
// first minute's rate to the end") and the same for server CPU per request (flat = 1); 0 when
// there are fewer than two intervals or a figure is missing.
func holdRatios(list []Interval) (rate, cpu float64) {
	if len(list) < 2 {
		return 0, 0
	}
	first, last := list[0], list[len(list)-1]
	if first.MsgPerSec > 0 {
		rate = last.MsgPerSec / first.MsgPerSec
	}
	if first.ServerCPUMicrosPerRequest > 0 && last.ServerCPUMicrosPerRequest > 0 {
		cpu = last.ServerCPUMicrosPerRequest / first.ServerCPUMicrosPerRequest
	}
	return rate, cpu
}
