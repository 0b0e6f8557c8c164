//go:build crash

package crashtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// api is a thin Queen v1 client: only what the harness needs, answers decoded loosely.
type api struct {
	base   string
	client *http.Client
}

func newAPI(base string, conns int) *api {
	tr := &http.Transport{
		MaxIdleConns:        conns * 2,
		MaxIdleConnsPerHost: conns * 2,
		MaxConnsPerHost:     conns * 2,
		DisableCompression:  true,
		IdleConnTimeout:     30 * time.Second,
	}
	return &api{base: base, client: &http.Client{Transport: tr, Timeout: 15 * time.Second}}
}

func (a *api) close() { a.client.CloseIdleConnections() }

// do sends one request; a nil error means an HTTP answer arrived in full.
func (a *api) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, b, nil
}

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

func (a *api) push(ctx context.Context, items []pushItem) (int, []pushResult, error) {
	st, b, err := a.do(ctx, http.MethodPost, "/api/v1/push", map[string]any{"items": items})
	if err != nil || st != http.StatusCreated {
		return st, nil, err
	}
	var res []pushResult
	if err := json.Unmarshal(b, &res); err != nil {
		return st, nil, fmt.Errorf("push answer %q: %w", trunc(b), err)
	}
	return st, res, nil
}

type popMessage struct {
	ID            string          `json:"id"`
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	Data          json.RawMessage `json:"data"`
}

type popAnswer struct {
	LeaseID  string       `json:"leaseId"`
	Messages []popMessage `json:"messages"`
}

// pop answers (204, nil) for nothing and (200, messages) otherwise.
func (a *api) pop(ctx context.Context, queue string, q url.Values) (int, *popAnswer, error) {
	st, b, err := a.do(ctx, http.MethodGet, "/api/v1/pop/queue/"+url.PathEscape(queue)+"?"+q.Encode(), nil)
	if err != nil || st != http.StatusOK {
		return st, nil, err
	}
	var ans popAnswer
	if err := json.Unmarshal(b, &ans); err != nil {
		return st, nil, fmt.Errorf("pop answer %q: %w", trunc(b), err)
	}
	return st, &ans, nil
}

type ackItem struct {
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
	LeaseID       string `json:"leaseId,omitempty"`
	Status        string `json:"status"`
}

type ackResult struct {
	Index         int     `json:"index"`
	TransactionID string  `json:"transactionId"`
	Success       bool    `json:"success"`
	Error         *string `json:"error"`
}

func (a *api) ackBatch(ctx context.Context, group string, items []ackItem) (int, []ackResult, error) {
	st, b, err := a.do(ctx, http.MethodPost, "/api/v1/ack/batch", map[string]any{"acknowledgments": items, "consumerGroup": group})
	if err != nil || st != http.StatusOK {
		return st, nil, err
	}
	var res []ackResult
	if err := json.Unmarshal(b, &res); err != nil {
		return st, nil, fmt.Errorf("ack answer %q: %w", trunc(b), err)
	}
	return st, res, nil
}

type groupRow struct {
	Name      string `json:"name"`
	QueueName string `json:"queueName"`
	TotalLag  *int64 `json:"totalLag"`
}

type groupPartition struct {
	Partition string `json:"partition"`
	OffsetLag *int64 `json:"offsetLag"`
}

// negativeLags lists every (group, queue[, partition]) whose lag is below zero: a cursor
// past its partition's high-water mark.
func (a *api) negativeLags(ctx context.Context, groups ...string) ([]string, error) {
	var bad []string
	st, b, err := a.do(ctx, http.MethodGet, "/api/v1/consumer-groups", nil)
	if err != nil {
		return nil, err
	}
	if st != http.StatusOK {
		return nil, fmt.Errorf("GET /api/v1/consumer-groups: %d %s", st, trunc(b))
	}
	var rows []groupRow
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("consumer-groups answer %q: %w", trunc(b), err)
	}
	for _, r := range rows {
		if r.TotalLag != nil && *r.TotalLag < 0 {
			bad = append(bad, fmt.Sprintf("group %s queue %s totalLag %d", r.Name, r.QueueName, *r.TotalLag))
		}
	}
	for _, g := range groups {
		st, b, err := a.do(ctx, http.MethodGet, "/api/v1/consumer-groups/"+url.PathEscape(g), nil)
		if err != nil {
			return nil, err
		}
		if st == http.StatusNotFound {
			continue // the per-group detail route is optional (spec 7.6 is P1); the list was checked
		}
		if st != http.StatusOK {
			return nil, fmt.Errorf("GET consumer-groups/%s: %d %s", g, st, trunc(b))
		}
		var detail map[string]struct {
			Partitions []groupPartition `json:"partitions"`
		}
		if err := json.Unmarshal(b, &detail); err != nil {
			return nil, fmt.Errorf("consumer-groups/%s answer %q: %w", g, trunc(b), err)
		}
		for q, d := range detail {
			for _, p := range d.Partitions {
				if p.OffsetLag != nil && *p.OffsetLag < 0 {
					bad = append(bad, fmt.Sprintf("group %s queue %s partition %s offsetLag %d", g, q, p.Partition, *p.OffsetLag))
				}
			}
		}
	}
	return bad, nil
}

func trunc(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}
