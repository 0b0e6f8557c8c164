//go:build cluster

package clustertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"syscall"
	"time"
)

// The fault kinds of issue 15: kill -9 of the leader, SIGSTOP of a node past the election
// timeout (raft's default: 1 s), and a follower's restart; and issue 22's network partitions
// (netcut_test.go): the leader or a follower cut off from both others, and a one-way cut
// between the leader and a follower (either direction).
const (
	killLeader      = "kill-9-leader"
	pauseLeader     = "sigstop-leader"
	pauseFollower   = "sigstop-follower"
	restartFollower = "restart-follower"
	isolateLeader   = "partition-leader"
	isolateFollower = "partition-follower"
	oneWayCut       = "one-way-cut"
)

// allFaultKinds in the order the first faults take them, so a short run meets each kind once
// (CI runs 7).
var allFaultKinds = []string{killLeader, isolateLeader, pauseLeader, oneWayCut, restartFollower, isolateFollower, pauseFollower}

// faultKindsFor is allFaultKinds, without the partitions when partitions is false.
func faultKindsFor(partitions bool) []string {
	var out []string
	for _, k := range allFaultKinds {
		if partitions || (k != isolateLeader && k != isolateFollower && k != oneWayCut) {
			out = append(out, k)
		}
	}
	return out
}

// fault is one injected fault and what followed it.
type fault struct {
	n         int
	kind      string
	node      string
	leader    string // before
	at        time.Time
	held      time.Duration // down or paused for
	healed    time.Time     // restarted or resumed
	settled   time.Time     // one leader again, every node following it
	newLeader string
	note      string
}

// inject applies one fault of kind with leader leading and undoes it (restart, SIGCONT);
// it does not wait for the cluster to settle.
func inject(kind string, leader *node, nodes []*node, cuts *netCuts, rng *rand.Rand) (fault, error) {
	f := fault{kind: kind, leader: leader.id}
	var followers []*node
	for _, n := range nodes {
		if n != leader {
			followers = append(followers, n)
		}
	}
	target := leader
	if kind == pauseFollower || kind == restartFollower || kind == isolateFollower || kind == oneWayCut {
		target = followers[rng.IntN(len(followers))]
	}
	f.node = target.id
	switch kind {
	case killLeader:
		f.held = time.Second + time.Duration(rng.IntN(3000))*time.Millisecond
		f.at = time.Now()
		if err := target.kill9(); err != nil {
			return f, err
		}
		time.Sleep(f.held)
		if err := target.launch(); err != nil {
			return f, err
		}
	case pauseLeader, pauseFollower:
		f.held = 2500*time.Millisecond + time.Duration(rng.IntN(1500))*time.Millisecond
		f.at = time.Now()
		if _, err := target.signal(syscall.SIGSTOP, false); err != nil {
			return f, err
		}
		time.Sleep(f.held)
		if _, err := target.signal(syscall.SIGCONT, false); err != nil {
			return f, err
		}
	case restartFollower:
		f.at = time.Now()
		clean, err := target.term(20 * time.Second)
		if err != nil {
			return f, err
		}
		if !clean {
			f.note = "did not stop within 20 s of SIGTERM: killed"
		}
		f.held = time.Since(f.at) + time.Duration(rng.IntN(1000))*time.Millisecond
		time.Sleep(f.held - time.Since(f.at))
		if err := target.launch(); err != nil {
			return f, err
		}
	case isolateLeader, isolateFollower, oneWayCut:
		if cuts == nil {
			return f, fmt.Errorf("fault %s needs partitions (CLUSTER_PARTITIONS)", kind)
		}
		f.held = 2500*time.Millisecond + time.Duration(rng.IntN(1500))*time.Millisecond
		cut := func(on bool) error { return cuts.isolate(target, nodes, on) }
		if kind == oneWayCut {
			from, to := leader, target
			if rng.IntN(2) == 0 {
				from, to = target, leader
			}
			f.note = fmt.Sprintf("%s cannot reach %s; %s reaches %s", from.id, to.id, to.id, from.id)
			cut = func(on bool) error { return cuts.set(from, to, on) }
		}
		f.at = time.Now()
		if err := cut(true); err != nil {
			return f, err
		}
		time.Sleep(f.held)
		if err := cut(false); err != nil {
			return f, err
		}
	default:
		return f, fmt.Errorf("unknown fault kind %q", kind)
	}
	f.healed = time.Now()
	return f, nil
}

// failoverFigures is, per fault, the time from the fault to the first push answered 201 and
// the first pop answered 200 or 204 whose attempt was sent after the fault.
func failoverFigures(l *ledger, faults []fault) (push, pop []time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := func(spans []span, at time.Time) time.Duration {
		best := time.Duration(-1)
		for _, s := range spans {
			if !s.sent.Before(at) {
				if d := s.recv.Sub(at); best < 0 || d < best {
					best = d
				}
			}
		}
		return best
	}
	for _, f := range faults {
		push = append(push, first(l.pushAnswers, f.at))
		pop = append(pop, first(l.popAnswers, f.at))
	}
	return push, pop
}

// faultSummary prints each fault kind's count and its failover times (mean and max).
func faultSummary(faults []fault, push, pop []time.Duration) []string {
	type agg struct {
		n                 int
		pushSum, popSum   time.Duration
		pushMax, popMax   time.Duration
		pushMiss, popMiss int
	}
	by := map[string]*agg{}
	for i, f := range faults {
		a := by[f.kind]
		if a == nil {
			a = &agg{}
			by[f.kind] = a
		}
		a.n++
		if push[i] < 0 {
			a.pushMiss++
		} else {
			a.pushSum += push[i]
			a.pushMax = max(a.pushMax, push[i])
		}
		if pop[i] < 0 {
			a.popMiss++
		} else {
			a.popSum += pop[i]
			a.popMax = max(a.popMax, pop[i])
		}
	}
	var out []string
	for kind, a := range by {
		mean := func(sum time.Duration, n int) string {
			if n == 0 {
				return "-"
			}
			return (sum / time.Duration(n)).Round(time.Millisecond).String()
		}
		out = append(out, fmt.Sprintf("%-17s %3d faults; fault -> first push: mean %s max %s; -> first pop: mean %s max %s%s",
			kind, a.n, mean(a.pushSum, a.n-a.pushMiss), a.pushMax.Round(time.Millisecond), mean(a.popSum, a.n-a.popMiss), a.popMax.Round(time.Millisecond),
			missing(a.pushMiss, a.popMiss)))
	}
	sort.Strings(out)
	return out
}

// ms rounds a failover time; a negative one means no answer came.
func ms(d time.Duration) string {
	if d < 0 {
		return "none"
	}
	return d.Round(time.Millisecond).String()
}

func missing(push, pop int) string {
	if push == 0 && pop == 0 {
		return ""
	}
	return fmt.Sprintf(" (no answer after %d of them for push, %d for pop)", push, pop)
}

// faultLine is one fault for the log.
func faultLine(l *ledger, f fault, push, pop time.Duration) string {
	var b strings.Builder
	settled := "never settled"
	if !f.settled.IsZero() {
		settled = fmt.Sprintf("settled %v later, %s leads", f.settled.Sub(f.at).Round(time.Millisecond), f.newLeader)
	}
	fmt.Fprintf(&b, "fault %2d %-17s %s at %s (leader %s), held %v, %s; first push %v, first pop %v",
		f.n, f.kind, f.node, l.rel(f.at), f.leader, f.held.Round(time.Millisecond), settled, ms(push), ms(pop))
	if f.note != "" {
		b.WriteString("; " + f.note)
	}
	return b.String()
}

// restartDead starts every node whose process ended by itself (a crash: already reported).
func restartDead(l *ledger, nodes []*node) {
	for _, n := range nodes {
		if running, _, inc := n.state(); !running {
			if err := n.launch(); err != nil {
				l.violate("9 liveness", "node %s could not be started again after process %d ended: %v", n.id, inc, err)
				continue
			}
			l.note("%s started again after process %d ended by itself", n.id, inc)
		}
	}
}

// settleOrRecover waits for a settled leader; when none comes, it reports the roles, starts
// any dead node and waits once more.
func settleOrRecover(ctx context.Context, c *client, l *ledger, nodes []*node, after string) (*node, error) {
	restartDead(l, nodes)
	leader, err := settle(ctx, c, nodes, 45*time.Second)
	if err == nil {
		return leader, nil
	}
	l.violate("9 liveness", "after %s: %v", after, err)
	restartDead(l, nodes)
	return settle(ctx, c, nodes, 45*time.Second)
}
