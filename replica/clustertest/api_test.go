//go:build cluster

package clustertest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"
)

// The Queen v1 shapes the harness reads (spec sections 1, 3, 4, 5), decoded loosely.

type pushItem struct {
	Queue         string          `json:"queue"`
	Partition     string          `json:"partition"`
	TransactionID string          `json:"transactionId"`
	Payload       json.RawMessage `json:"payload"`
}

type pushResult struct {
	Status        string `json:"status"`
	TransactionID string `json:"transactionId"`
	MessageID     string `json:"message_id"`
	PartitionID   string `json:"partition_id"`
	Error         string `json:"error"`
}

type popMessage struct {
	ID            string `json:"id"`
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	Partition     string `json:"partition"`
	LeaseID       string `json:"leaseId"`
}

type popAnswer struct {
	LeaseID  string       `json:"leaseId"`
	Messages []popMessage `json:"messages"`
}

type ackItem struct {
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	LeaseID       string `json:"leaseId,omitempty"`
	Status        string `json:"status"`
}

type ackResult struct {
	Index   int     `json:"index"`
	Success bool    `json:"success"`
	Error   *string `json:"error"`
}

type txOp struct {
	Type          string     `json:"type"`
	Items         []pushItem `json:"items,omitempty"`
	TransactionID string     `json:"transactionId,omitempty"`
	PartitionID   string     `json:"partitionId,omitempty"`
	LeaseID       string     `json:"leaseId,omitempty"`
	Status        string     `json:"status,omitempty"`
	ConsumerGroup string     `json:"consumerGroup,omitempty"`
}

type txAnswer struct {
	Success bool   `json:"success"`
	Error   string `json:"error"`
	Results []struct {
		Type          string  `json:"type"`
		Success       bool    `json:"success"`
		TransactionID string  `json:"transactionId"`
		MessageID     string  `json:"messageId"`
		PartitionID   string  `json:"partitionId"`
		Error         *string `json:"error"`
	} `json:"results"`
}

// Per-attempt bounds: longer than an election (1 s timeouts, about 2-3 s to a new leader),
// so a request stuck on a paused node is given up and sent to another.
const (
	writeTry = 4 * time.Second
	popTry   = 5 * time.Second
)

// push sends items until an answer below 500 arrives (or ctx ends).
func (c *client) push(ctx context.Context, rng *rand.Rand, items []pushItem) (answer, []pushResult, error) {
	body, _ := json.Marshal(map[string]any{"items": items})
	ans, err := c.call(ctx, rng, "push", http.MethodPost, "/api/v1/push", body, writeTry)
	if err != nil || ans.status != http.StatusCreated {
		return ans, nil, err
	}
	var res []pushResult
	if err := json.Unmarshal(ans.body, &res); err != nil {
		return ans, nil, fmt.Errorf("push answer %q: %w", trunc(ans.body), err)
	}
	return ans, res, nil
}

// pop answers (204, nil) for nothing and (200, messages) otherwise.
func (c *client) pop(ctx context.Context, rng *rand.Rand, queue string, q url.Values) (answer, *popAnswer, error) {
	ans, err := c.call(ctx, rng, "pop", http.MethodGet, "/api/v1/pop/queue/"+url.PathEscape(queue)+"?"+q.Encode(), nil, popTry)
	if err != nil || ans.status != http.StatusOK {
		return ans, nil, err
	}
	var p popAnswer
	if err := json.Unmarshal(ans.body, &p); err != nil {
		return ans, nil, fmt.Errorf("pop answer %q: %w", trunc(ans.body), err)
	}
	return ans, &p, nil
}

func (c *client) ackBatch(ctx context.Context, rng *rand.Rand, group string, items []ackItem) (answer, []ackResult, error) {
	body, _ := json.Marshal(map[string]any{"acknowledgments": items, "consumerGroup": group})
	ans, err := c.call(ctx, rng, "ack", http.MethodPost, "/api/v1/ack/batch", body, writeTry)
	if err != nil || ans.status != http.StatusOK {
		return ans, nil, err
	}
	var res []ackResult
	if err := json.Unmarshal(ans.body, &res); err != nil {
		return ans, nil, fmt.Errorf("ack answer %q: %w", trunc(ans.body), err)
	}
	return ans, res, nil
}

func (c *client) transaction(ctx context.Context, rng *rand.Rand, ops []txOp) (answer, *txAnswer, error) {
	body, _ := json.Marshal(map[string]any{"operations": ops})
	ans, err := c.call(ctx, rng, "transaction", http.MethodPost, "/api/v1/transaction", body, writeTry)
	if err != nil || ans.status != http.StatusOK {
		return ans, nil, err
	}
	var res txAnswer
	if err := json.Unmarshal(ans.body, &res); err != nil {
		return ans, nil, fmt.Errorf("transaction answer %q: %w", trunc(ans.body), err)
	}
	return ans, &res, nil
}

// configure sets a queue's leaseTime in seconds.
func (c *client) configure(ctx context.Context, rng *rand.Rand, queue string, leaseSeconds int) error {
	body, _ := json.Marshal(map[string]any{"queue": queue, "options": map[string]any{"leaseTime": leaseSeconds}})
	ans, err := c.call(ctx, rng, "configure", http.MethodPost, "/api/v1/configure", body, writeTry)
	if err != nil {
		return fmt.Errorf("configure %s: %w", queue, err)
	}
	if ans.status != http.StatusOK && ans.status != http.StatusCreated {
		return fmt.Errorf("configure %s: %d %s", queue, ans.status, trunc(ans.body))
	}
	return nil
}
