package httpapi

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/broker"
)

// The workloads of performance.md: batches of 100, 200-byte payloads, HTTP layer only.

func pushBody100() []byte {
	var sb strings.Builder
	sb.WriteString(`{"items":[`)
	for i := range 100 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"queue":"bench","partition":"p%d","transactionId":"tx-%06d","payload":{"id":%d,"body":"%s"}}`,
			i%4, i, i, strings.Repeat("x", 175))
	}
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

func ackBody100() []byte {
	var sb strings.Builder
	sb.WriteString(`{"consumerGroup":"g","acknowledgments":[`)
	for i := range 100 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"transactionId":"tx-%06d","partitionId":"0198e4c1-0000-7000-8000-00000000aa01","leaseId":"0198e4c2-0000-7000-8000-00000000bb01","status":"completed"}`, i)
	}
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

func popResult100() broker.PopResult {
	msgs := make([]broker.Message, 100)
	payload := []byte(`{"id":1,"body":"` + strings.Repeat("x", 175) + `"}`)
	for i := range msgs {
		msgs[i] = broker.Message{ID: "0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01", TransactionID: fmt.Sprintf("tx-%06d", i),
			Payload: payload, CreatedAtMicros: 1785402764881042 + int64(i/50), Queue: "bench", Partition: "Default",
			PartitionID: "0198e4c1-0000-7000-8000-00000000aa01"}
	}
	return broker.PopResult{Queue: "bench", Partition: "Default", PartitionID: msgs[0].PartitionID,
		LeaseID: "0198e4c2-0000-7000-8000-00000000bb01", Group: "g", PartitionsClaimed: 1, Messages: msgs}
}

func BenchmarkDecodePush100(b *testing.B) {
	body := pushBody100()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, msg := decodePush(body); msg != "" {
			b.Fatal(msg)
		}
	}
}

// BenchmarkCheckPayload100 is the UTF-8 check alone (issue 10) over the 100 payloads of
// pushBody100: what it adds to every push of that shape.
func BenchmarkCheckPayload100(b *testing.B) {
	items, msg := decodePush(pushBody100())
	if msg != "" {
		b.Fatal(msg)
	}
	n := 0
	for _, it := range items {
		n += len(it.Payload)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		for i, it := range items {
			if m := checkPayload(it.Payload, "items", i); m != "" {
				b.Fatal(m)
			}
		}
	}
}

// BenchmarkDecodeAckBatch100: copy is the strings copied into an arena (decodeAckBatch), alias
// what the ack/batch handler does (parseAckBatchBodyInto without copies, the parser held).
func BenchmarkDecodeAckBatch100(b *testing.B) {
	body := ackBody100()
	for _, copyStrs := range []bool{true, false} {
		b.Run(map[bool]string{true: "copy", false: "alias"}[copyStrs], func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			parser := parserPool.Get()
			defer parserPool.Put(parser)
			for b.Loop() {
				if _, _, msg := parseAckBatchBodyInto(parser, nil, body, copyStrs); msg != "" {
					b.Fatal(msg)
				}
			}
		})
	}
}

func BenchmarkEncodePop100(b *testing.B) {
	res := popResult100()
	out := appendPopResult(nil, &res, "g")
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		out = appendPopResult(out[:0], &res, "g")
	}
}

// benchHandler runs requests through Server.Handler on a reused RequestCtx: routing, parsing,
// encoding and SwapBody, without sockets. The fake backend answers instantly.
func benchHandler(b *testing.B, fake *fakeBackend, method, uri string, body []byte) {
	s := New(fake, fake, Config{Logger: zerolog.Nop(), DefaultPopTimeout: 1})
	var ctx fasthttp.RequestCtx
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod(method)
		ctx.Request.SetRequestURI(uri)
		ctx.Request.SetBody(body)
		s.Handler(&ctx)
		if c := ctx.Response.StatusCode(); c >= 300 {
			b.Fatalf("status %d: %s", c, ctx.Response.Body())
		}
	}
}

func BenchmarkHandlerPush100(b *testing.B) {
	fake := newFake()
	results := make([]broker.PushResult, 100)
	for i := range results {
		results[i] = broker.PushResult{Status: broker.PushQueued, TransactionID: fmt.Sprintf("tx-%06d", i),
			MessageID: "0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01", PartitionID: "0198e4c1-0000-7000-8000-00000000aa01", Queue: "bench"}
	}
	fake.onPush = func([]broker.PushItem) ([]broker.PushResult, error) { return results, nil }
	benchHandler(b, fake, "POST", "/api/v1/push", pushBody100())
}

func BenchmarkHandlerPop100(b *testing.B) {
	fake := newFake()
	res := popResult100()
	fake.onPop = func(context.Context, broker.PopRequest) (broker.PopResult, error) { return res, nil }
	benchHandler(b, fake, "GET", "/api/v1/pop/queue/bench?consumerGroup=g&batch=100", nil)
}

func BenchmarkHandlerAck100(b *testing.B) {
	fake := newFake()
	results := make([]broker.AckResult, 100)
	for i := range results {
		results[i] = broker.AckResult{Index: i, TransactionID: fmt.Sprintf("tx-%06d", i), Success: true, QueueName: "bench", PartitionName: "Default"}
	}
	fake.onAck = func(string, []broker.AckItem) ([]broker.AckResult, error) { return results, nil }
	benchHandler(b, fake, "POST", "/api/v1/ack/batch", ackBody100())
}

// BenchmarkEncodePushResults100: the 201 body of a 100-message push into one queue.
func BenchmarkEncodePushResults100(b *testing.B) {
	results := make([]broker.PushResult, 100)
	for i := range results {
		results[i] = broker.PushResult{Status: broker.PushQueued, TransactionID: fmt.Sprintf("run1-w3-%06d", i),
			MessageID: "0198e4c1-0000-7000-8000-00000000aa01", PartitionID: "0198e4c1-0000-7000-8000-00000000bb01", Queue: "bench"}
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = appendPushResults(buf[:0], results)
	}
}
