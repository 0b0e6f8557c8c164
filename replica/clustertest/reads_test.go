//go:build cluster

package clustertest

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"time"
)

// Check 6 (issue 22): client-visible reads never go back. A reader asks random nodes for a
// working group's cursors (GET /api/v1/consumer-groups/:group, totalConsumed per partition)
// through every fault; a follower forwards, a cut-off or deposed leader must answer 503 rather
// than show a cursor the cluster never committed. Cursors only move forward in this load (no
// seek, no group deletion), so any read whose request was sent after another read's answer
// came must show every partition's totalConsumed at least as high.

// groupRead is one answered cursor read.
type groupRead struct {
	group, node string
	sent, recv  time.Time
	consumed    map[string]int64 // "queue/partition" → totalConsumed
}

// readTry bounds one attempt: a read on a cut-off leader waits until it steps down (raft's
// leader lease) before its 503.
const readTry = 3 * time.Second

// groupReader reads the working groups' cursors until ctx ends, one read at a time.
func (w *workload) groupReader(ctx context.Context, id int, rng *rand.Rand) {
	groups := []string{ackGroup, txGroup}
	for ctx.Err() == nil {
		g := groups[rng.IntN(len(groups))]
		ans, err := w.c.call(ctx, rng, "group-read", http.MethodGet, "/api/v1/consumer-groups/"+url.PathEscape(g), nil, readTry)
		if err != nil {
			return
		}
		if ans.status == http.StatusOK {
			var body map[string]struct {
				Partitions []struct {
					Partition     string `json:"partition"`
					TotalConsumed int64  `json:"totalConsumed"`
				} `json:"partitions"`
			}
			if err := json.Unmarshal(ans.body, &body); err != nil {
				w.led.violate("6 read went back", "GET consumer-groups/%s on %s answered %q: %v", g, ans.node, trunc(ans.body), err)
				continue
			}
			r := groupRead{group: g, node: ans.node, sent: ans.sent, recv: ans.recv, consumed: map[string]int64{}}
			for q, v := range body {
				for _, p := range v.Partitions {
					r.consumed[q+"/"+p.Partition] = p.TotalConsumed
				}
			}
			w.led.read(r)
		}
		backoff(ctx, time.Duration(20+rng.IntN(40))*time.Millisecond)
	}
}

func (l *ledger) read(r groupRead) {
	l.mu.Lock()
	l.reads = append(l.reads, r)
	l.mu.Unlock()
}

// checkReads is check 6 over every read: for each read, the highest totalConsumed per partition
// among the reads answered before it was sent must not exceed its own. It returns the number of
// reads checked.
func checkReads(l *ledger) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	byGroup := map[string][]groupRead{}
	for _, r := range l.reads {
		byGroup[r.group] = append(byGroup[r.group], r)
	}
	for g, reads := range byGroup {
		byRecv := append([]groupRead(nil), reads...)
		sort.Slice(byRecv, func(i, j int) bool { return byRecv[i].recv.Before(byRecv[j].recv) })
		bySent := append([]groupRead(nil), reads...)
		sort.Slice(bySent, func(i, j int) bool { return bySent[i].sent.Before(bySent[j].sent) })
		best := map[string]groupRead{} // partition → the read answered so far showing the most
		next := 0
		for _, r := range bySent {
			for ; next < len(byRecv) && byRecv[next].recv.Before(r.sent); next++ {
				done := byRecv[next]
				for p, v := range done.consumed {
					if b, ok := best[p]; !ok || v > b.consumed[p] {
						best[p] = done
					}
				}
			}
			for p, b := range best {
				if v, ok := r.consumed[p]; !ok || v < b.consumed[p] {
					shown := "no cursor"
					if ok {
						shown = "totalConsumed " + itoa(v)
					}
					l.violations = append(l.violations, violation{check: "6 read went back", text: "group " + g + " partition " + p + ": " +
						shown + " from " + r.node + " (sent " + l.rel(r.sent) + ", answered " + l.rel(r.recv) + ") after totalConsumed " +
						itoa(b.consumed[p]) + " from " + b.node + " (answered " + l.rel(b.recv) + ")"})
				}
			}
		}
	}
	return len(l.reads)
}

func itoa(v int64) string {
	b, _ := json.Marshal(v)
	return string(b)
}
