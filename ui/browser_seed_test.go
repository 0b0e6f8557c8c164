//go:build browser

package ui_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/auth"
	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/httpapi"
	"github.com/combmq/comb/report"
	"github.com/combmq/comb/ui"
)

// server is a real broker on a temporary directory behind the real HTTP API and the embedded
// dashboard, on a loopback port.
type server struct {
	url   string
	token string // sent by the seeding calls when auth is on
}

func startServer(t *testing.T, a *auth.Authenticator) *server {
	t.Helper()
	b, err := broker.Open(broker.Config{DataDir: t.TempDir(), Sync: "never", Logger: zerolog.Nop()})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := httpapi.New(b, report.New(b.View()), httpapi.Config{Logger: zerolog.Nop(), Auth: a, Static: ui.Embedded(), Version: "browser-test"})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
		require.NoError(t, b.Close())
	})
	return &server{url: "http://" + ln.Addr().String()}
}

// call sends one API request and decodes its JSON answer into out (when not nil); it returns
// the status.
func (s *server) call(t *testing.T, method, path string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	require.NoError(t, err)
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	if out != nil && res.StatusCode < 300 && len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, out), "%s %s: %s", method, path, raw)
	}
	return res.StatusCode
}

func (s *server) must(t *testing.T, method, path string, want int, body, out any) {
	t.Helper()
	require.Equal(t, want, s.call(t, method, path, body, out), "%s %s", method, path)
}

// seeded is what seed put in, as the dashboard must show it.
type seeded struct {
	queues, partitions, messages, deadLetters int
	ordersPartitions, ordersMessages          int
	dlqPartitionID, dlqTransactionID          string
	traced                                    bool // POST /api/v1/traces answered 201
}

type popped struct {
	LeaseID  string `json:"leaseId"`
	Messages []struct {
		TransactionID string `json:"transactionId"`
		PartitionID   string `json:"partitionId"`
	} `json:"messages"`
}

// seed makes two queues (orders: 3 partitions of 4 messages and an empty Default; emails: 5 in
// Default), a consumer
// group "billing" that completes orders/p0 and fails one message of orders/p1 into the DLQ
// (retryLimit 0), a queue-mode pop holding two emails under lease, and a trace event on the
// failed message.
func seed(t *testing.T, s *server) seeded {
	t.Helper()
	s.must(t, "POST", "/api/v1/configure", 200, map[string]any{"queue": "orders", "namespace": "shop", "task": "billing", "options": map[string]any{"retryLimit": 0}}, nil)
	s.must(t, "POST", "/api/v1/configure", 200, map[string]any{"queue": "emails", "namespace": "notify", "task": "send"}, nil)
	var items []map[string]any
	for i := 0; i < 12; i++ {
		items = append(items, map[string]any{"queue": "orders", "partition": fmt.Sprintf("p%d", i%3), "transactionId": fmt.Sprintf("order-%02d", i), "payload": map[string]any{"order": i, "total": 100 * i}})
	}
	for i := 0; i < 5; i++ {
		items = append(items, map[string]any{"queue": "emails", "transactionId": fmt.Sprintf("email-%d", i), "payload": map[string]any{"to": fmt.Sprintf("user%d@example.com", i)}})
	}
	s.must(t, "POST", "/api/v1/push", 201, map[string]any{"items": items}, nil)

	var p0 popped
	s.must(t, "GET", "/api/v1/pop/queue/orders/partition/p0?consumerGroup=billing&batch=4", 200, nil, &p0)
	require.Len(t, p0.Messages, 4)
	var acks []map[string]any
	for _, m := range p0.Messages {
		acks = append(acks, map[string]any{"transactionId": m.TransactionID, "partitionId": m.PartitionID, "leaseId": p0.LeaseID, "status": "completed"})
	}
	s.must(t, "POST", "/api/v1/ack/batch", 200, map[string]any{"consumerGroup": "billing", "acknowledgments": acks}, nil)

	var p1 popped
	s.must(t, "GET", "/api/v1/pop/queue/orders/partition/p1?consumerGroup=billing&batch=1", 200, nil, &p1)
	require.Len(t, p1.Messages, 1)
	failed := p1.Messages[0]
	s.must(t, "POST", "/api/v1/ack", 200, map[string]any{"transactionId": failed.TransactionID, "partitionId": failed.PartitionID, "leaseId": p1.LeaseID,
		"status": "failed", "error": "card declined", "consumerGroup": "billing"}, nil)

	var e popped
	s.must(t, "GET", "/api/v1/pop/queue/emails?batch=2", 200, nil, &e)
	require.Len(t, e.Messages, 2)

	st := s.call(t, "POST", "/api/v1/traces", map[string]any{"transactionId": failed.TransactionID, "partitionId": failed.PartitionID,
		"consumerGroup": "billing", "traceNames": []string{"checkout"}, "eventType": "error", "data": map[string]any{"step": "charge"}}, nil)
	require.True(t, st == 201 || (st == 404 && allowed404("/api/v1/traces")), "POST /api/v1/traces: %d", st)

	return seeded{
		queues: 2, partitions: 5, messages: 17, deadLetters: 1,
		ordersPartitions: 4, ordersMessages: 12, // configure made each queue's Default partition
		dlqPartitionID: failed.PartitionID, dlqTransactionID: failed.TransactionID,
		traced: st == 201,
	}
}
