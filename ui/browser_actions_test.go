//go:build browser

// The dashboard's actions in Chromium (issue 25): DLQ requeue and delete, consumer group seek
// (to the end, to a time, one partition) and delete (on a queue, everywhere), each confirmed in
// the page's dialog; the numbers the page shows afterwards are the server's, and a token
// without the route's role gets the page's 403 sentence, with nothing changed.

package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/golang-jwt/jwt/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/auth"
)

// js quotes v for a script.
func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// cell is the text of column col in the row keyed row of table name ("" when absent).
func cell(t *testing.T, ctx context.Context, name, row, col string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(() => {
  const t = [...document.querySelectorAll('#main table[data-table]')].find(e => e.dataset.table === %s);
  const r = t && [...t.querySelectorAll('tr[data-row]')].find(e => e.dataset.row === %s);
  const c = r && [...r.querySelectorAll('[data-col]')].find(e => e.dataset.col === %s);
  return c ? c.textContent.trim() : '';
})()`, js(name), js(row), js(col))))
	require.NoError(t, err)
	return s
}

// metric is a [data-metric]'s text.
func metric(t *testing.T, ctx context.Context, key string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(
		`document.querySelector('#main [data-metric=' + JSON.stringify(%s) + ']')?.textContent.trim() ?? ''`, js(key))))
	require.NoError(t, err)
	return s
}

// notice is what an action reported: the notice's kind (ok, error) and text.
type notice struct{ Kind, Text string }

// perform clicks selector, answers the confirmation dialog (confirm or cancel) and, when
// confirmed, returns the notice the action left once the view was redrawn.
func perform(t *testing.T, ctx context.Context, selector string, confirm bool) notice {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Evaluate[chromedp.Void](`(() => { const n = document.getElementById('notice'); delete n.dataset.kind; n.textContent = ''; })()`),
		chromedp.Click(chromedp.CSS(selector)),
		chromedp.Poll[chromedp.Void](`document.getElementById('confirm-dialog').open`, chromedp.WithPollingTimeout(10*time.Second)),
	), "click %s", selector)
	button := "#confirm-cancel"
	if confirm {
		button = "#confirm-ok"
	}
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(button)),
		chromedp.Poll[chromedp.Void](`!document.getElementById('confirm-dialog').open`, chromedp.WithPollingTimeout(10*time.Second)),
	))
	if !confirm {
		return notice{}
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.Poll[chromedp.Void](
		`!!document.getElementById('notice').dataset.kind && document.body.dataset.state === 'ready'`, chromedp.WithPollingTimeout(20*time.Second))))
	n, err := chromedp.Run(ctx, chromedp.Evaluate[notice](`({Kind: document.getElementById('notice').dataset.kind, Text: document.getElementById('notice').textContent})`))
	require.NoError(t, err)
	return n
}

// tick checks the DLQ row of transaction tx.
func tick(t *testing.T, ctx context.Context, tx string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
  const r = [...document.querySelectorAll('[data-table="dlq"] tr[data-row]')].find(e => e.dataset.row === %s);
  r.querySelector('input[type=checkbox]').click();
})()`, js(tx)))), "tick %s", tx)
}

// failTwoOnP2 has billing pop two messages of orders/p2 and fail both into the DLQ
// (retryLimit 0), so the DLQ holds three entries of orders.
func failTwoOnP2(t *testing.T, srv *server) []string {
	t.Helper()
	var p popped
	srv.must(t, "GET", "/api/v1/pop/queue/orders/partition/p2?consumerGroup=billing&batch=2", 200, nil, &p)
	require.Len(t, p.Messages, 2)
	var acks []map[string]any
	var txs []string
	for _, m := range p.Messages {
		acks = append(acks, map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": p.LeaseID, "status": "failed", "error": "address unknown"})
		txs = append(txs, m.TransactionID)
	}
	srv.must(t, "POST", "/api/v1/ack/batch", 200, map[string]any{"consumerGroup": "billing", "acknowledgments": acks}, nil)
	return txs
}

type dlqPage struct {
	Total    int `json:"total"`
	Messages []struct {
		ID            string `json:"id"`
		TransactionID string `json:"transactionId"`
	} `json:"messages"`
}

// groupLag is the sum of a group's offset lag on queue, from GET /api/v1/consumer-groups/:group.
func groupLag(t *testing.T, srv *server, group, queue string) (sum int, byPartition map[string]int) {
	t.Helper()
	var d map[string]struct {
		Partitions []struct {
			Partition string `json:"partition"`
			OffsetLag int    `json:"offsetLag"`
		} `json:"partitions"`
	}
	srv.must(t, "GET", "/api/v1/consumer-groups/"+group, 200, nil, &d)
	byPartition = map[string]int{}
	for _, p := range d[queue].Partitions {
		sum += p.OffsetLag
		byPartition[p.Partition] = p.OffsetLag
	}
	return sum, byPartition
}

func TestDashboardActionsInChromium(t *testing.T) {
	srv := startServer(t, nil)
	seed(t, srv)
	failed := failTwoOnP2(t, srv) // orders: order-01 (p1), order-02 and order-05 (p2)
	require.Equal(t, []string{"order-02", "order-05"}, failed)
	// A trace event with no group is queue mode's (spec 9.3).
	var dl dlqPage
	srv.must(t, "GET", "/api/v1/dlq?queue=orders", 200, nil, &dl)
	require.Equal(t, 3, dl.Total)
	srv.must(t, "POST", "/api/v1/traces", 201, map[string]any{"transactionId": "email-0", "partitionId": emailsPartition(t, srv), "traceNames": []string{"welcome"}, "data": map[string]any{"sent": true}}, nil)

	ctx, rec := newBrowser(t)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.url+"/")))

	// The queue table's new columns, on the overview and on Queues.
	p := open(t, ctx, "#/queues", "queues")
	require.Equal(t, "ready", p.State, "%+v", p)
	require.Equal(t, "3", cell(t, ctx, "queues", "orders", "dlq"))
	require.Equal(t, "0", cell(t, ctx, "queues", "emails", "dlq"))
	require.Equal(t, "5", cell(t, ctx, "queues", "orders", "behind"), "billing: 3 left on p1, 2 on p2")
	require.Equal(t, "5", cell(t, ctx, "queues", "emails", "behind"), "queue mode: all 5 emails")
	require.Regexp(t, `^\d+s$`, cell(t, ctx, "queues", "orders", "lag"), "seconds, in human units")
	// Rates per minute over the last 15 minutes (the minute being counted included).
	require.Equal(t, "0.8", cell(t, ctx, "queues", "orders", "in"), "12 pushed / 15 min")
	require.Equal(t, "0.5", cell(t, ctx, "queues", "orders", "out"), "billing's 4 completed + 3 failed acks / 15 min")
	require.Equal(t, "0.3", cell(t, ctx, "queues", "emails", "in"), "5 pushed / 15 min")
	require.Equal(t, "0", cell(t, ctx, "queues", "emails", "out"), "the emails are leased, none acked")
	p = open(t, ctx, "#/", "overview")
	require.Equal(t, "3", cell(t, ctx, "overview-queues", "orders", "dlq"))
	require.Equal(t, "5", cell(t, ctx, "overview-queues", "emails", "behind"))

	// (queue mode) wherever the group appears.
	p = open(t, ctx, "#/groups", "groups")
	qm, err := chromedp.Run(ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('[data-table="groups"] tr[data-row]')].find(r => r.dataset.row === '__QUEUE_MODE__/emails').querySelector('td').textContent`))
	require.NoError(t, err)
	require.Equal(t, "(queue mode)", qm)
	p = open(t, ctx, "#/traces/welcome", "traces")
	require.Equal(t, 1, p.Tables["trace-events"])
	txt, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('[data-table="trace-events"] [data-col="group"]').textContent`))
	require.NoError(t, err)
	require.Equal(t, "(queue mode)", txt)

	// DLQ requeue: cancelled first (nothing changes), then confirmed for the two of p2.
	p = open(t, ctx, "#/dlq", "dlq")
	require.Equal(t, "3", p.Metrics["dlq-total"])
	tick(t, ctx, "order-02")
	tick(t, ctx, "order-05")
	require.Equal(t, notice{}, perform(t, ctx, `[data-action="requeue"]`, false))
	srv.must(t, "GET", "/api/v1/dlq?queue=orders", 200, nil, &dl)
	require.Equal(t, 3, dl.Total, "a cancelled requeue changes nothing")
	var ids = map[string]string{}
	for _, m := range dl.Messages {
		ids[m.TransactionID] = m.ID
	}
	n := perform(t, ctx, `[data-action="requeue"]`, true)
	require.Equal(t, notice{"ok", "Requeued 2 dead letters."}, n)
	require.Equal(t, "1", metric(t, ctx, "dlq-total"), "3 - the 2 requeued")
	srv.must(t, "GET", "/api/v1/dlq?queue=orders", 200, nil, &dl)
	require.Equal(t, 1, dl.Total)
	require.Equal(t, "order-01", dl.Messages[0].TransactionID)
	for _, tx := range failed {
		var copyMsg struct {
			Partition string          `json:"partition"`
			Payload   json.RawMessage `json:"payload"`
		}
		id := tx + "#requeued-" + ids[tx]
		srv.must(t, "GET", "/api/v1/messages/"+partitionID(t, srv, "orders", "p2")+"/"+strings.ReplaceAll(id, "#", "%23"), 200, nil, &copyMsg)
		require.Equal(t, "p2", copyMsg.Partition)
		require.JSONEq(t, fmt.Sprintf(`{"order":%s,"total":%s}`, tx[len("order-0"):], tx[len("order-0"):]+"00"), string(copyMsg.Payload), "the copy carries the payload")
	}
	p = open(t, ctx, "#/queues", "queues")
	require.Equal(t, "1", cell(t, ctx, "queues", "orders", "dlq"))

	// DLQ delete of what is left, through select-all.
	p = open(t, ctx, "#/dlq", "dlq")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`[data-select-all]`))))
	n = perform(t, ctx, `[data-action="delete"]`, true)
	require.Equal(t, notice{"ok", "Deleted 1 dead letter."}, n)
	require.Equal(t, "0", metric(t, ctx, "dlq-total"))
	srv.must(t, "GET", "/api/v1/dlq", 200, nil, &dl)
	require.Equal(t, 0, dl.Total)
	p = open(t, ctx, "#/", "overview")
	require.Equal(t, "0", p.Metrics["messages-dead-letter"])
	require.Equal(t, "0", cell(t, ctx, "overview-queues", "orders", "dlq"))
	p = open(t, ctx, "#/queues/orders", "queue")
	require.Equal(t, "0", p.Metrics["queue-dead-letter"])

	// Group seek to the end: every partition of billing on orders at lag 0.
	p = open(t, ctx, "#/groups/billing", "group")
	before, _ := groupLag(t, srv, "billing", "orders")
	require.Equal(t, fmt.Sprint(before), metric(t, ctx, "behind-orders"))
	require.Positive(t, before)
	n = perform(t, ctx, `[data-action="seek-end"][data-queue="orders"]`, true)
	require.Equal(t, notice{"ok", "Moved 3 partitions of orders to the end."}, n)
	after, _ := groupLag(t, srv, "billing", "orders")
	require.Equal(t, 0, after)
	require.Equal(t, "0", metric(t, ctx, "behind-orders"))
	for _, part := range []string{"p0", "p1", "p2"} {
		require.Equal(t, "0", cell(t, ctx, "group-partitions", "orders/"+part, "lag"), part)
	}

	// Seek to a time before every message: all of them are the group's again.
	require.NoError(t, chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-seek-time="orders"]').value = '2000-01-01T00:00:00'`)))
	n = perform(t, ctx, `[data-action="seek-time"][data-queue="orders"]`, true)
	require.Equal(t, "ok", n.Kind, n.Text)
	require.True(t, strings.HasPrefix(n.Text, "Moved 3 partitions of orders to 2000-01-01"), n.Text)
	sum, by := groupLag(t, srv, "billing", "orders")
	require.Equal(t, map[string]int{"p0": 4, "p1": 4, "p2": 6}, by, "every message again, p2's two copies included")
	require.Equal(t, fmt.Sprint(sum), metric(t, ctx, "behind-orders"))
	require.Equal(t, "6", cell(t, ctx, "group-partitions", "orders/p2", "lag"))

	// One partition to its end.
	n = perform(t, ctx, `[data-action="seek-partition"][data-queue="orders"][data-partition="p0"]`, true)
	require.Equal(t, notice{"ok", "Moved orders/p0 to the end."}, n)
	_, by = groupLag(t, srv, "billing", "orders")
	require.Equal(t, map[string]int{"p0": 0, "p1": 4, "p2": 6}, by)
	require.Equal(t, "0", cell(t, ctx, "group-partitions", "orders/p0", "lag"))
	require.Equal(t, "10", metric(t, ctx, "behind-orders"))

	// Delete billing on its only queue: the page goes back to the groups.
	n = perform(t, ctx, `[data-action="delete-queue"][data-queue="orders"]`, true)
	require.Equal(t, notice{"ok", "Deleted billing on orders: 3 partition positions."}, n)
	require.NoError(t, chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`document.body.dataset.view === 'groups'`)))
	require.Equal(t, "1", metric(t, ctx, "groups"), "queue mode is left")

	// Delete queue mode everywhere, from its page titled (queue mode).
	p = open(t, ctx, "#/groups/__QUEUE_MODE__", "group")
	title, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#main h1').textContent`))
	require.NoError(t, err)
	require.Equal(t, "Consumer group (queue mode)", title)
	n = perform(t, ctx, `[data-action="delete-group"]`, true)
	require.Equal(t, notice{"ok", "Deleted (queue mode): 1 partition position."}, n)
	require.Equal(t, "0", metric(t, ctx, "groups"))
	var groups []any
	srv.must(t, "GET", "/api/v1/consumer-groups", 200, nil, &groups)
	require.Empty(t, groups)

	rec.check(t)
}

// partitionID is the id of queue/partition (GET /api/v1/resources/queues/:queue).
func partitionID(t *testing.T, srv *server, queue, partition string) string {
	t.Helper()
	var d struct {
		Partitions []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"partitions"`
	}
	srv.must(t, "GET", "/api/v1/resources/queues/"+queue, 200, nil, &d)
	for _, p := range d.Partitions {
		if p.Name == partition {
			return p.ID
		}
	}
	t.Fatalf("no partition %s/%s", queue, partition)
	return ""
}

func emailsPartition(t *testing.T, srv *server) string {
	return partitionID(t, srv, "emails", "Default")
}

// With JWT on, the page sends the token it holds: a read-only token's requeue and a
// read-write token's group delete are refused with 403, which the page turns into a sentence
// naming the role; nothing changes.
func TestDashboardActionRefusedWithoutTheRole(t *testing.T) {
	const secret = "browser-secret"
	a, err := auth.New(auth.Config{Enabled: true, Algorithm: auth.HS256, Secret: secret}, zerolog.Nop())
	require.NoError(t, err)
	srv := startServer(t, a)
	mint := func(role string) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "operator", "role": role, "iat": time.Now().Unix()}).SignedString([]byte(secret))
		require.NoError(t, err)
		return tok
	}
	srv.token = mint("admin")
	seed(t, srv)

	ctx, rec := newBrowser(t)
	rec.allow403 = true
	useToken := func(tok string) {
		require.NoError(t, chromedp.Do(ctx,
			chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`localStorage.setItem('comb.token', %s)`, js(tok))),
			chromedp.Reload(),
			chromedp.WaitVisible(chromedp.CSS(`body[data-state="ready"]`)),
		))
	}
	// The page's origin first, for localStorage: without a token its first reads answer 401,
	// allowed until the token is stored. allow401 is set before the navigation and the page is
	// waited into its "auth" state, so no 401 of that first load can arrive after it is cleared
	// (a late one failed CI once).
	rec.mu.Lock()
	rec.allow401 = true
	rec.mu.Unlock()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(srv.url+"/#/queues"),
		chromedp.Poll[chromedp.Void](`document.body.dataset.state === 'auth'`),
	))
	useToken(mint("read-only"))
	rec.mu.Lock()
	rec.allow401 = false
	rec.mu.Unlock()

	p := open(t, ctx, "#/dlq", "dlq")
	require.Equal(t, "1", p.Metrics["dlq-total"])
	tick(t, ctx, "order-01")
	n := perform(t, ctx, `[data-action="requeue"]`, true)
	require.Equal(t, "error", n.Kind)
	require.Equal(t, `The server refused (403 Insufficient permissions): this action needs a token with the read-write role. Use "Access token" to enter one.`, n.Text)
	require.Equal(t, "1", metric(t, ctx, "dlq-total"), "nothing requeued")

	useToken(mint("read-write"))
	p = open(t, ctx, "#/groups/billing", "group")
	n = perform(t, ctx, `[data-action="delete-group"]`, true)
	require.Equal(t, "error", n.Kind)
	require.Contains(t, n.Text, "403 Insufficient permissions")
	require.Contains(t, n.Text, "the admin role")
	var groups []struct {
		Name string `json:"name"`
	}
	srv.must(t, "GET", "/api/v1/consumer-groups", 200, nil, &groups)
	require.Len(t, groups, 2, "billing is still there")
	rec.check(t)
}
