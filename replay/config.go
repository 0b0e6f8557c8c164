package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/meta"
)

// A replay from a data directory carries each queue's configuration (namespace, task and every
// option of spec 2.2: lease time, retries, DLQ settings, retention, encryptionEnabled, ...) by
// configuring the target queue before its first push; it used to push into an auto-created
// queue with default options (issue 25). Configure is a whole replace (spec 2.2): a target
// queue that exists takes the source's configuration.
//
// An encryptionEnabled queue's payloads are pushed in clear (the target seals them again), so
// replay refuses to push them where they would be stored in plaintext: a comb target says so in
// configure's warnings (a server without QUEEN_ENCRYPTION_KEY, httpapi.WarningStoredPlain); a
// target that is not comb cannot tell, and is refused too. AllowPlaintext overrides both.

// ErrPlaintextTarget: the target would store an encrypted queue's payloads in plaintext.
var ErrPlaintextTarget = errors.New("the target would store encrypted payloads in plaintext")

// storedPlainPrefix opens comb's configure warning for an encryptionEnabled queue on a server
// without a key (httpapi.WarningStoredPlain; replay does not import httpapi).
const storedPlainPrefix = "encryptionEnabled:"

// targetQueue is what replay learnt configuring one target queue.
type targetQueue struct {
	configured bool // configure answered 200
	seals      bool // the target seals its payloads at rest (comb, encryptionEnabled, a key)
}

// sourceQueues maps each target queue name of logs to the source queue configured there
// (the first by name when --to-queue merges several).
func (r *replayer) sourceQueues(v *datadir.View, logs []datadir.LogDir, names map[string]datadir.PartInfo) map[string]*meta.Queue {
	out := map[string]*meta.Queue{}
	if v.Meta == nil || v.Meta.State == nil {
		return out
	}
	var qs []*meta.Queue
	seen := map[[16]byte]bool{}
	for _, d := range logs {
		n := names[d.Rel]
		q := v.Meta.State.QueueByID[n.QueueID]
		if q == nil || seen[q.ID] {
			continue
		}
		seen[q.ID] = true
		qs = append(qs, q)
	}
	sort.Slice(qs, func(i, j int) bool { return qs[i].Name < qs[j].Name })
	for _, q := range qs {
		name := q.Name
		if r.opts.ToQueue != "" {
			name = r.opts.ToQueue
		}
		if _, ok := out[name]; !ok {
			out[name] = q
		}
	}
	return out
}

// carryConfig configures every target queue like its source queue (unless NoConfig) and
// refuses, before any push, an encrypted source queue whose target would store plaintext.
func (r *replayer) carryConfig(ctx context.Context, queues map[string]*meta.Queue) error {
	r.targets = map[string]targetQueue{}
	names := make([]string, 0, len(queues))
	for n := range queues {
		names = append(names, n)
	}
	sort.Strings(names)
	isComb := false
	if len(names) > 0 {
		isComb = r.targetIsComb(ctx)
	}
	for _, name := range names {
		q := queues[name]
		var tq targetQueue
		if !r.opts.NoConfig {
			warnings, echoed, err := r.configure(ctx, name, q)
			if err != nil {
				return err
			}
			tq.configured = true
			r.stats.Configured++
			plain := false
			for _, w := range warnings {
				plain = plain || strings.HasPrefix(w, storedPlainPrefix)
			}
			tq.seals = isComb && echoed && !plain
		}
		r.targets[name] = tq
		if !q.Opts.EncryptionEnabled || tq.seals || r.opts.AllowPlaintext {
			continue
		}
		why := "the target (comb) has no QUEEN_ENCRYPTION_KEY"
		switch {
		case r.opts.NoConfig:
			why = "with --no-config replay does not learn whether the target queue is encrypted"
		case !isComb:
			why = "the target is not comb, and replay cannot tell whether it holds an encryption key"
		}
		done := ""
		if tq.configured {
			done = "; the queue was configured there, no message was pushed"
		}
		return fmt.Errorf("queue %q has encryptionEnabled, and %s: %w%s. Give the target a key (QUEEN_ENCRYPTION_KEY), or pass --allow-plaintext to store them in plaintext there",
			q.Name, why, ErrPlaintextTarget, done)
	}
	return nil
}

// configure posts the source queue's configuration for the target queue name. It returns the
// answer's warnings and whether it echoed encryptionEnabled true.
func (r *replayer) configure(ctx context.Context, name string, q *meta.Queue) ([]string, bool, error) {
	body, err := json.Marshal(map[string]any{"queue": name, "namespace": q.Namespace, "task": q.Task, "options": optionsJSON(q.Opts)})
	if err != nil {
		return nil, false, err
	}
	b, status, err := r.call(ctx, http.MethodPost, "/api/v1/configure", body)
	if err != nil {
		return nil, false, fmt.Errorf("configuring queue %q on the target: %w", name, err)
	}
	if status != http.StatusOK {
		return nil, false, fmt.Errorf("configuring queue %q on the target: %w: answered %d: %s", name, ErrTarget, status, clip(b))
	}
	var ans struct {
		Warnings []string `json:"warnings"`
		Options  struct {
			EncryptionEnabled bool `json:"encryptionEnabled"`
		} `json:"options"`
	}
	if err := json.Unmarshal(b, &ans); err != nil {
		return nil, false, fmt.Errorf("configuring queue %q on the target: %w: %v", name, ErrTarget, err)
	}
	return ans.Warnings, ans.Options.EncryptionEnabled, nil
}

// targetIsComb reads the target's GET /health: comb answers "server":"comb".
func (r *replayer) targetIsComb(ctx context.Context) bool {
	b, status, err := r.call(ctx, http.MethodGet, "/health", nil)
	if err != nil || status != http.StatusOK {
		return false
	}
	var h struct {
		Server string `json:"server"`
	}
	return json.Unmarshal(b, &h) == nil && h.Server == "comb"
}

// call sends one request to the target (with the token, when given) and reads the answer.
func (r *replayer) call(ctx context.Context, method, path string, body []byte) ([]byte, int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.opts.Target+path, rd)
	if err != nil {
		return nil, 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	r.authorize(req)
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return b, resp.StatusCode, err
}

// authorize adds the bearer token of a JWT-enabled target.
func (r *replayer) authorize(req *http.Request) {
	if r.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.opts.Token)
	}
}

// optionsJSON is every option of spec 2.2 with its JSON name.
func optionsJSON(o meta.QueueOptions) map[string]any {
	return map[string]any{
		"leaseTime": o.LeaseTime, "retryLimit": o.RetryLimit, "retryDelay": o.RetryDelay, "maxSize": o.MaxSize,
		"ttl": o.TTL, "priority": o.Priority, "delayedProcessing": o.DelayedProcessing, "windowBuffer": o.WindowBuffer,
		"minPopWaitTime": o.MinPopWaitTime, "retentionSeconds": o.RetentionSeconds,
		"completedRetentionSeconds": o.CompletedRetentionSeconds, "maxWaitTimeSeconds": o.MaxWaitTimeSeconds,
		"retentionEnabled": o.RetentionEnabled, "encryptionEnabled": o.EncryptionEnabled,
		"deadLetterQueue": o.DeadLetterQueue, "dlqAfterMaxRetries": o.DLQAfterMaxRetries,
	}
}

// NotCarried lists what a replay with opts leaves behind, for the operator to handle (issue
// 25: "says what it does not carry").
func NotCarried(opts Options) []string {
	out := []string{
		"consumer-group cursors and leases: a group on the target starts as a new group does (its subscriptionMode)",
		"dead letters: list them with `comb dump --dlq --payload`",
		"message timestamps: createdAt on the target is the time of the replay",
		"traces, producerSub and retry counts",
	}
	switch {
	case opts.DumpFile != "":
		out = append(out, "queue configuration (a dump file holds none): configure the target queues first")
	case opts.NoConfig:
		out = append(out, "queue configuration (--no-config)")
	}
	return out
}
