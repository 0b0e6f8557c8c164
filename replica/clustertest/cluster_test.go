//go:build cluster

package clustertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

// TestClusterFaults is the fault harness of issue 15: CLUSTER_FAULTS faults of a 3-node
// cluster under mixed load, then the five checks of doc.go.
func TestClusterFaults(t *testing.T) {
	faults := envInt("CLUSTER_FAULTS", 50)
	seed := uint64(envInt("CLUSTER_SEED", int(time.Now().UnixNano()%1_000_000_007)))
	pushers := envInt("CLUSTER_PUSHERS", 3)
	consumers := envInt("CLUSTER_CONSUMERS", 2)
	runMs := envInt("CLUSTER_RUN_MS", 2500)
	warmup := time.Duration(envInt("CLUSTER_WARMUP_MS", 0)) * time.Millisecond
	leaseS := max(envInt("CLUSTER_LEASE_S", 3), 1)
	leaseTime := time.Duration(leaseS) * time.Second
	t.Logf("CLUSTER_SEED=%d CLUSTER_FAULTS=%d pushers=%d consumers=%d per group, leaseTime %ds", seed, faults, pushers, consumers, leaseS)
	rng := rand.New(rand.NewPCG(seed, 0xfa17))

	root, err := os.MkdirTemp("", "comb-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("CLUSTER_KEEP") != "" {
			t.Logf("data directories and logs kept in %s", root)
			return
		}
		os.RemoveAll(root)
	})
	bin, err := buildComb(root)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := newNodes(root, bin, 3)
	if err != nil {
		t.Fatal(err)
	}
	led := newLedger(time.Now())
	for _, n := range nodes {
		n.onUnexpectedExit = func(n *node, inc int, err error) {
			led.violate("9 node broke", "node %s process %d exited by itself (%v); log %s ends:\n%s", n.id, inc, err, n.logPath, indent(n.logTail(1500)))
		}
	}
	defer func() {
		for _, n := range nodes {
			if running, _, _ := n.state(); running {
				if clean, err := n.term(20 * time.Second); err != nil || !clean {
					t.Logf("node %s did not stop within 20 s of SIGTERM (killed): %v", n.id, err)
				}
			}
		}
	}()
	for _, n := range nodes {
		if err := n.launch(); err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(nodes)
	ctx := context.Background()
	leader, err := settle(ctx, c, nodes, 60*time.Second)
	if err != nil {
		t.Fatalf("the cluster never elected a leader: %v", err)
	}
	led.note("%s leads the new cluster", leader.id)
	for _, q := range []string{workQueue, txQueue} {
		if err := c.configure(ctx, rng, q, leaseS); err != nil {
			t.Fatal(err)
		}
	}

	monCtx, stopMon := context.WithCancel(ctx)
	mon := newMonitor(c, led, nodes)
	monDone := make(chan struct{})
	go func() { mon.run(monCtx); close(monDone) }()
	defer func() { stopMon(); <-monDone }()

	w := &workload{c: c, led: led, seed: seed}
	stopLoad := w.run(pushers, consumers)
	var done []fault
	time.Sleep(warmup)
	for i := 0; i < faults; i++ {
		time.Sleep(500*time.Millisecond + time.Duration(rng.IntN(runMs+1))*time.Millisecond)
		kind := faultKinds[i%len(faultKinds)]
		if i >= len(faultKinds) {
			kind = faultKinds[rng.IntN(len(faultKinds))]
		}
		f, err := inject(kind, leader, nodes, rng)
		f.n = i + 1
		if err != nil {
			led.violate("9 liveness", "fault %d %s on %s: %v", f.n, kind, f.node, err)
		}
		led.note("fault %d: %s %s (held %v)", f.n, kind, f.node, f.held.Round(time.Millisecond))
		leader, err = settleOrRecover(ctx, c, led, nodes, fmt.Sprintf("fault %d (%s %s)", f.n, kind, f.node))
		if err != nil {
			led.violate("9 liveness", "no leader after fault %d, stopping the faults: %v", f.n, err)
			done = append(done, f)
			break
		}
		f.settled, f.newLeader = time.Now(), leader.id
		done = append(done, f)
		t.Logf("fault %d/%d %s on %s done, %s leads (%d violations so far)", f.n, faults, kind, f.node, leader.id, led.violationCount())
	}
	time.Sleep(time.Second)
	stopLoad()
	led.note("load stopped")

	// The end: re-send unanswered pushes, let every lease run out, drain the working groups,
	// read both queues with fresh groups, wait for the replicas to agree, check.
	endCtx, cancelEnd := context.WithTimeout(ctx, 5*time.Minute)
	defer cancelEnd()
	resent, err := w.resendPending(endCtx)
	if err != nil {
		led.violate("9 liveness", "%v", err)
	}
	time.Sleep(leaseTime + time.Second)
	drained := map[string]int{}
	for _, g := range []string{ackGroup, txGroup} {
		n, err := w.drainGroup(endCtx, g)
		drained[g] = n
		if err != nil {
			led.violate("9 liveness", "%v", err)
		}
	}
	fresh := map[string][]popMessage{}
	for _, q := range []string{workQueue, txQueue} {
		msgs, err := readFresh(endCtx, c, rng, q, fmt.Sprintf("fresh-%d", seed))
		if err != nil {
			t.Fatalf("%v (violations so far: %d)", err, led.violationCount())
		}
		fresh[q] = msgs
	}
	fig := checkRun(led, fresh, leaseTime)
	// Check 5 on the nodes that run (one that cannot start again is reported already).
	var live []*node
	for _, n := range nodes {
		if running, paused, _ := n.state(); running && !paused {
			live = append(live, n)
		}
	}
	lsn, err := waitApplied(endCtx, c, live, time.Minute)
	listed := map[string]int{}
	if err != nil {
		led.violate("5 replicas disagree", "%v", err)
	} else {
		listed, err = checkReplicas(endCtx, c, led, live, fresh, led.t0.Add(-time.Minute), time.Now().Add(time.Minute))
		if err != nil {
			led.violate("5 replicas disagree", "listing messages: %v", err)
		}
	}
	stopMon()
	<-monDone
	failed500 := scanLogs(led, nodes)

	// The report.
	pushT, popT := failoverFigures(led, done)
	var rep []string
	add := func(format string, args ...any) { rep = append(rep, fmt.Sprintf(format, args...)) }
	add("seed %d, %d faults, run %s, data and logs %s", seed, len(done), time.Since(led.t0).Round(time.Second), root)
	add("pushes acknowledged: %d to %s, %d by transactions to %s (%d unanswered pushes re-sent at the end)", fig.pushesAcked, workQueue, fig.txPushesAcked, txQueue, resent)
	add("deliveries: %s %d (%d again), %s %d (%d again); drained at the end: %v", ackGroup, fig.deliveries[ackGroup], fig.redeliveries[ackGroup], txGroup, fig.deliveries[txGroup], fig.redeliveries[txGroup], drained)
	add("acks answered success: %d completed items, %d retry-nacked items; transactions: %d committed, %d refused, %d unknown", fig.ackItemsApplied, fig.nacksApplied, fig.txApplied, fig.txRefused, fig.txUnknown)
	add("fresh read: %v; replicas at appliedLSN %d list %v; monitor samples %d; 500s logged per node %v", fig.freshRead, lsn, listed, mon.samples, failed500)
	add("attempts by route and answer: %s", strings.Join(c.statusLines(), ", "))
	for _, s := range faultSummary(done, pushT, popT) {
		add("%s", s)
	}
	for i, f := range done {
		add("%s", faultLine(led, f, pushT[i], popT[i]))
	}
	byCheck, timeline := led.report()
	add("timeline:")
	for _, e := range timeline {
		add("  %s", e)
	}
	checks := make([]string, 0, len(byCheck))
	total := 0
	for k, v := range byCheck {
		checks = append(checks, k)
		total += len(v)
	}
	sort.Strings(checks)
	add("violations: %d", total)
	for _, k := range checks {
		v := byCheck[k]
		add("check %s: %d", k, len(v))
		for i, s := range v {
			if i == 50 {
				add("  ... %d more", len(v)-50)
				break
			}
			add("  %s", s)
		}
	}
	if err := led.dump(root); err != nil {
		add("ledger dump: %v", err)
	}
	report := strings.Join(rep, "\n")
	_ = os.WriteFile(filepath.Join(root, "report.txt"), []byte(report+"\n"), 0o644)
	t.Log("\n" + report)
	if total > 0 {
		t.Fatalf("%d violations (seed %d; report %s)", total, seed, filepath.Join(root, "report.txt"))
	}
}

// newNodes lays out n nodes under root: fixed loopback HTTP and raft addresses, a data
// directory each, logs in root/logs.
func newNodes(root, bin string, n int) ([]*node, error) {
	addrs, err := freeAddrs(2 * n)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(root, "logs"), 0o755); err != nil {
		return nil, err
	}
	var cluster []string
	nodes := make([]*node, n)
	for i := range nodes {
		id := fmt.Sprintf("n%d", i+1)
		nodes[i] = &node{id: id, httpAddr: addrs[2*i], raftAddr: addrs[2*i+1], bin: bin,
			dataDir: filepath.Join(root, id), logPath: filepath.Join(root, "logs", id+".log")}
		cluster = append(cluster, id+"="+addrs[2*i+1])
	}
	// Peer certificates of one CA, made by the binary under test (issue 22: a cluster node
	// runs with peer TLS by default).
	pki := filepath.Join(root, "certs")
	var ids []string
	for _, nd := range nodes {
		ids = append(ids, nd.id)
	}
	if out, err := exec.Command(bin, "certs", "--dir", pki, "--nodes", strings.Join(ids, ","), "--hosts", "127.0.0.1").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("comb certs: %w\n%s", err, out)
	}
	for _, nd := range nodes {
		nd.cluster = strings.Join(cluster, ",")
		nd.peerFlags = []string{"--peer-cert-file", filepath.Join(pki, nd.id+".crt"), "--peer-key-file", filepath.Join(pki, nd.id+".key"),
			"--peer-trusted-ca-file", filepath.Join(pki, "ca.crt")}
	}
	return nodes, nil
}

func indent(s string) string {
	return "      " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n      ")
}
