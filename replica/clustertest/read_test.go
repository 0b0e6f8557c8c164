//go:build cluster

package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// readFresh reads queue from its start with a group that never read it (autoAck) and returns
// every message in delivery order, which per partition is offset order. autoAck is
// at-most-once: a pop whose answer may have been lost (uncertain) could have taken messages
// with it, so the read starts over with another new group, up to three times.
func readFresh(ctx context.Context, c *client, rng *rand.Rand, queue, group string) ([]popMessage, error) {
	for round := 1; round <= 3; round++ {
		g := fmt.Sprintf("%s-%d", group, round)
		q := url.Values{}
		q.Set("consumerGroup", g)
		q.Set("batch", "1000")
		q.Set("partitions", "100")
		q.Set("autoAck", "true")
		q.Set("subscriptionMode", "all")
		var all []popMessage
		clean := true
		for {
			ans, pop, err := c.pop(ctx, rng, queue, q)
			if err != nil {
				return nil, fmt.Errorf("fresh read of %s: %w", queue, err)
			}
			if ans.uncertain {
				clean = false
			}
			if ans.status == http.StatusNoContent {
				break
			}
			if ans.status != http.StatusOK {
				return nil, fmt.Errorf("fresh read of %s: pop answered %d: %s", queue, ans.status, trunc(ans.body))
			}
			all = append(all, pop.Messages...)
		}
		if clean {
			return all, nil
		}
	}
	return nil, fmt.Errorf("fresh read of %s: three reads met an answer that may have been lost", queue)
}

// listed is one message of GET /api/v1/messages.
type listed struct {
	ID            string `json:"id"`
	TransactionID string `json:"transactionId"`
	Partition     string `json:"partition"`
}

// listNode reads every message of queue's partition from one node's own state (a read-only
// route: a follower answers it from what it applied), newest first, in time windows small
// enough for the route's offset cap (10,000).
func listNode(ctx context.Context, c *client, n *node, queue, partition string, from, to time.Time) ([]listed, error) {
	const limit, maxOffset = 1000, 10000
	var out []listed
	for offset := 0; ; offset += limit {
		if offset > maxOffset {
			mid := from.Add(to.Sub(from) / 2)
			a, err := listNode(ctx, c, n, queue, partition, from, mid)
			if err != nil {
				return nil, err
			}
			b, err := listNode(ctx, c, n, queue, partition, mid.Add(time.Microsecond), to)
			if err != nil {
				return nil, err
			}
			return append(b, a...), nil
		}
		q := url.Values{}
		q.Set("queue", queue)
		q.Set("partition", partition)
		q.Set("from", from.UTC().Format("2006-01-02T15:04:05.000000Z"))
		q.Set("to", to.UTC().Format("2006-01-02T15:04:05.000000Z"))
		q.Set("limit", strconv.Itoa(limit))
		q.Set("offset", strconv.Itoa(offset))
		st, b, err := c.direct(ctx, n, http.MethodGet, "/api/v1/messages?"+q.Encode(), 10*time.Second)
		if err != nil {
			return nil, fmt.Errorf("%s: list %s/%s: %w", n.id, queue, partition, err)
		}
		if st != http.StatusOK {
			return nil, fmt.Errorf("%s: list %s/%s: %d %s", n.id, queue, partition, st, trunc(b))
		}
		var page struct {
			Messages []listed `json:"messages"`
		}
		if err := json.Unmarshal(b, &page); err != nil {
			return nil, fmt.Errorf("%s: list %s/%s: %q: %w", n.id, queue, partition, trunc(b), err)
		}
		out = append(out, page.Messages...)
		if len(page.Messages) < limit {
			return out, nil
		}
	}
}
