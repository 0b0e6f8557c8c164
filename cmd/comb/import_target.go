package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/queenimport"
	"github.com/combmq/comb/seal"
)

// `comb import --target URL`: the import runs inside the running server (queenimport.Jobs,
// behind the admin routes /api/v1/migration/*), so every write goes through its commit log
// and a cluster replicates it; this command starts it and follows its status. The server, not
// this command, connects to Queen's PostgreSQL.

// migrationJobs is the server's import runner; encKey is Queen's QUEEN_ENCRYPTION_KEY
// (already checked by the security flags; "" carries no encrypted message).
func migrationJobs(b *broker.Broker, encKey string) *queenimport.Jobs {
	var key *seal.Key
	if encKey != "" {
		key, _ = seal.ParseKey(encKey)
	}
	return queenimport.NewJobs(b, key)
}

// targetAction is what `comb import --target` asks of the server.
type targetAction struct {
	target, token, from string
	follow, verify      bool
	cutover, stop, show bool
	overlap, interval   time.Duration
	quiet               bool
}

// targetClient calls a comb server's migration routes.
type targetClient struct {
	base, token string
	http        *http.Client
}

func (c *targetClient) call(method, op string, body any, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, c.base+"/api/v1/migration/"+op, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return res.StatusCode, err
	}
	if res.StatusCode >= 300 {
		var e struct{ Error string }
		if json.Unmarshal(raw, &e) == nil && e.Error != "" {
			return res.StatusCode, fmt.Errorf("%s %s: %d %s", method, op, res.StatusCode, e.Error)
		}
		return res.StatusCode, fmt.Errorf("%s %s: %d %s", method, op, res.StatusCode, strings.TrimSpace(string(raw)))
	}
	if out != nil {
		return res.StatusCode, json.Unmarshal(raw, out)
	}
	return res.StatusCode, nil
}

// runImportTarget runs a.
func runImportTarget(a targetAction) int {
	c := &targetClient{base: strings.TrimRight(a.target, "/"), token: a.token, http: &http.Client{Timeout: 15 * time.Minute}}
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "comb import --target: %v\n", err)
		return importFailed
	}
	switch {
	case a.show:
		var st json.RawMessage
		if _, err := c.call("GET", "status", nil, &st); err != nil {
			return fail(err)
		}
		fmt.Println(string(st))
		return importOK
	case a.stop:
		var st queenimport.JobStatus
		if _, err := c.call("POST", "stop", nil, &st); err != nil {
			return fail(err)
		}
		printJob(st)
		return jobExit(st)
	case a.cutover:
		var st queenimport.JobStatus
		if _, err := c.call("POST", "cutover", nil, &st); err != nil {
			return fail(err)
		}
		st, err := c.wait(a.quiet, func(s queenimport.JobStatus) bool {
			return s.CutoverAt != "" || s.Phase == "failed" || s.Phase == "done"
		})
		if err != nil {
			return fail(err)
		}
		printJob(st)
		if st.CutoverAt == "" {
			return importFailed
		}
		fmt.Println("cutover done: point consumers at comb, then producers; stop following with comb import --stop --target " + a.target)
		return importOK
	case a.verify:
		var v queenimport.Validation
		if _, err := c.call("POST", "validate", map[string]any{"url": a.from}, &v); err != nil {
			return fail(err)
		}
		for _, d := range v.Differences {
			fmt.Println(d)
		}
		for _, t := range v.Tables {
			if !t.Match {
				fmt.Printf("%s: queen %d, comb %d\n", t.Table, t.SourceCount, t.TargetCount)
			}
		}
		if !v.AllMatch {
			fmt.Fprintln(os.Stderr, "comb import --verify: differences found")
			return importDiffers
		}
		fmt.Println("comb import --verify: no difference")
		return importOK
	}
	body := map[string]any{"url": a.from, "follow": a.follow, "overlapMs": a.overlap.Milliseconds(), "intervalMs": a.interval.Milliseconds()}
	if _, err := c.call("POST", "start", body, nil); err != nil {
		return fail(err)
	}
	st, err := c.wait(a.quiet, func(s queenimport.JobStatus) bool { return s.Phase != "snapshot" })
	if err != nil {
		return fail(err)
	}
	printJob(st)
	if a.follow && st.Phase == "following" {
		fmt.Println("following: the server copies what reaches Queen; stop Queen's consumers, then comb import --cutover --target " + a.target)
		if !st.FollowBoundExact && st.FollowPasses > 0 {
			fmt.Fprintln(os.Stderr, "comb import: warning: Queen's sessions are hidden from this role; passes are bounded by the clock minus --overlap (grant pg_read_all_stats for an exact bound)")
		}
		return importOK
	}
	return jobExit(st)
}

// wait polls the job's status until done says so, printing changes of its current step.
func (c *targetClient) wait(quiet bool, done func(queenimport.JobStatus) bool) (queenimport.JobStatus, error) {
	var last string
	for {
		var st queenimport.JobStatus
		if _, err := c.call("GET", "status", nil, &st); err != nil {
			return st, err
		}
		if !quiet && st.CurrentStep != last {
			fmt.Fprintln(os.Stderr, st.CurrentStep)
			last = st.CurrentStep
		}
		if done(st) || st.Status == "idle" {
			return st, nil
		}
		time.Sleep(300 * time.Millisecond) // a poll interval, not a synchronisation
	}
}

func printJob(st queenimport.JobStatus) {
	i := st.Imported
	fmt.Printf("%s (%s, %.1fs): %d queues, %d partitions, %d messages (%d already there), %d cursors, %d live leases, %d subscriptions, %d dead letters; following: %d passes, %d messages\n",
		st.Status, st.Phase, st.ElapsedSeconds, i.Queues, i.Partitions, i.Messages, i.MessagesSkipped, i.Cursors, i.Leases,
		i.Subscriptions, i.DeadLetters, st.FollowPasses, st.FollowMessages)
	if st.Error != "" {
		fmt.Fprintln(os.Stderr, "error: "+st.Error)
	}
}

func jobExit(st queenimport.JobStatus) int {
	if st.Status == "error" {
		return importFailed
	}
	return importOK
}
