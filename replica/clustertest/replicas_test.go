//go:build cluster

package clustertest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// checkReplicas is check 5: each node's own list of every partition of every queue holds
// exactly the messages the fresh group read, with the same ids. The caller waited until every
// node applied the same LSN.
func checkReplicas(ctx context.Context, c *client, l *ledger, nodes []*node, fresh map[string][]popMessage, from, to time.Time) (listedPerNode map[string]int, err error) {
	listedPerNode = map[string]int{}
	parts := map[string][]string{workQueue: workPartitions, txQueue: txPartitions}
	for queue, msgs := range fresh {
		want := map[string]map[string]string{} // partition → txid → id
		for _, p := range parts[queue] {
			want[p] = map[string]string{}
		}
		for _, m := range msgs {
			if want[m.Partition] == nil {
				want[m.Partition] = map[string]string{}
			}
			want[m.Partition][m.TransactionID] = m.ID
		}
		for _, n := range nodes {
			for p, w := range want {
				got, err := listNode(ctx, c, n, queue, p, from, to)
				if err != nil {
					return listedPerNode, err
				}
				listedPerNode[n.id] += len(got)
				var missing, extra, otherID, twice []string
				seen := map[string]bool{}
				for _, m := range got {
					if seen[m.TransactionID] {
						twice = append(twice, m.TransactionID)
					}
					seen[m.TransactionID] = true
					id, ok := w[m.TransactionID]
					switch {
					case !ok:
						extra = append(extra, fmt.Sprintf("%s (%s)", m.TransactionID, m.ID))
					case id != m.ID:
						otherID = append(otherID, fmt.Sprintf("%s (%s here, %s read)", m.TransactionID, m.ID, id))
					}
				}
				for tx, id := range w {
					if !seen[tx] {
						missing = append(missing, fmt.Sprintf("%s (%s)", tx, id))
					}
				}
				for _, s := range [][]string{missing, extra, otherID, twice} {
					sort.Strings(s)
				}
				if len(missing)+len(extra)+len(otherID)+len(twice) > 0 {
					l.violate("5 replicas disagree", "node %s, %s/%s: %d messages listed, %d read by the fresh group; missing here %d [%s]; only here %d [%s]; other id here %d [%s]; listed twice %d [%s]",
						n.id, queue, p, len(got), len(w), len(missing), joinFirst(missing, 5), len(extra), joinFirst(extra, 5),
						len(otherID), joinFirst(otherID, 5), len(twice), joinFirst(twice, 5))
				}
			}
		}
	}
	return listedPerNode, nil
}

// logFindings are the log lines that say a node broke: raft's FSM giving up on the log
// (replica/fsm.go), a Go panic or fatal error. "request failed" (a 500) is counted, not judged.
var logFindings = []string{"stops following the log", "panic:", "fatal error:"}

// designedStop is the FSM's refusal on a deposed leader, which then re-executes itself to
// recover the committed state (docs/replication.md, "A deposed leader"): by design, not a
// finding (the monitor sees the new image).
const designedStop = "it must restart to recover"

// scanLogs reports every finding line of each node's log (up to 5 a node) and returns the
// count of logged 500s per node.
func scanLogs(l *ledger, nodes []*node) map[string]int {
	failed := map[string]int{}
	for _, n := range nodes {
		f, err := os.Open(n.logPath)
		if err != nil {
			l.violate("9 liveness", "node %s: log %s: %v", n.id, n.logPath, err)
			continue
		}
		var hits []string
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "request failed") {
				failed[n.id]++
			}
			for _, pat := range logFindings {
				if strings.Contains(line, pat) && !strings.Contains(line, designedStop) {
					hits = append(hits, line)
					break
				}
			}
		}
		f.Close()
		if len(hits) > 0 {
			if len(hits) > 5 {
				hits = append(hits[:5], fmt.Sprintf("... %d such lines in all", len(hits)))
			}
			l.violate("9 node broke", "node %s log %s:\n      %s", n.id, n.logPath, strings.Join(hits, "\n      "))
		}
	}
	return failed
}
