package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

func TestPushAnswers201WithBothIDSpellingsPerStatus(t *testing.T) {
	// spec 1.6 and 11 #24: snake_case fields plus transactionId/messageId aliases; which fields
	// appear depends on the status.
	fake := newFake()
	fake.onPush = func(items []broker.PushItem) ([]broker.PushResult, error) {
		return []broker.PushResult{
			{Status: broker.PushQueued, TransactionID: "t0", MessageID: "m0", PartitionID: "p0", Partition: "Default", Queue: "orders"},
			{Status: broker.PushDuplicate, TransactionID: "t1", MessageID: "m-old", PartitionID: "p0", Queue: "orders"},
			{Status: broker.PushFailed, TransactionID: "t2", Queue: "orders", Error: "Queue 'orders' would exceed max capacity"},
			{Status: broker.PushBuffered, TransactionID: "t3", Queue: "orders", Partition: "Default"},
			{Status: broker.PushQueued, TransactionID: "t4", MessageID: "m4", PartitionID: "p0", Queue: "orders", TraceID: "0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01"},
		}, nil
	}
	ts := startServer(t, fake, Config{})
	r := ts.do("POST", "/api/v1/push", `{"items":[{"queue":"orders"},{"queue":"orders"},{"queue":"orders"},{"queue":"orders"},{"queue":"orders"}]}`)
	requireJSON(t, r, 201, `[
	 {"index":0,"status":"queued","transaction_id":"t0","transactionId":"t0","message_id":"m0","messageId":"m0","partition_id":"p0","trace_id":null,"queueName":"orders"},
	 {"index":1,"status":"duplicate","transaction_id":"t1","transactionId":"t1","message_id":"m-old","messageId":"m-old","queueName":"orders"},
	 {"index":2,"status":"failed","transaction_id":"t2","transactionId":"t2","error":"Queue 'orders' would exceed max capacity"},
	 {"index":3,"status":"buffered","transaction_id":"t3","transactionId":"t3","queue":"orders","partition":"Default"},
	 {"index":4,"status":"queued","transaction_id":"t4","transactionId":"t4","message_id":"m4","messageId":"m4","partition_id":"p0","trace_id":"0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01","queueName":"orders"}
	]`)
}

func TestPushKeepsPayloadBytesExactlyAsPushed(t *testing.T) {
	// spec 1.1: stored and returned verbatim; every JSON kind is legal.
	payloads := []string{
		`{ "b" : [1, 2.50, "x\u00e9\"y"], "n":null }`,
		`[ ]`, `"just a string"`, `-12.5e+3`, `true`, `false`, `null`,
	}
	fake := newFake()
	ts := startServer(t, fake, Config{})
	var items []string
	for i, p := range payloads {
		items = append(items, `{"queue":"q","partition":"","transactionId":"t`+string(rune('0'+i))+`","payload":`+p+`}`)
	}
	items = append(items, `{"queue":"q","bufferMs":5,"producerSub":"evil","messageId":"x","namespace":"n"}`)
	r := ts.do("POST", "/api/v1/push", `{"bufferMs":10,"bufferMax":3,"items":[`+strings.Join(items, ",")+`]}`)
	require.Equal(t, 201, r.status, "%s", r.body)
	require.Len(t, fake.pushed, len(payloads)+1)
	for i, p := range payloads {
		require.Equal(t, p, string(fake.pushed[i].Payload), "item %d", i)
		require.Equal(t, "", fake.pushed[i].Partition, "empty partition is passed as '' (Default), spec 11 #28")
	}
	last := fake.pushed[len(payloads)]
	require.Nil(t, last.Payload, "absent payload is nil (null)")
	require.Equal(t, "", last.ProducerSub, "producerSub is never taken from the body (spec 1.5)")
	require.Equal(t, "", last.TransactionID, "absent transactionId is left for the broker to generate")
}

func TestPushEmptyItemsAnswers201EmptyArrayWithoutTheBroker(t *testing.T) {
	fake := newFake()
	ts := startServer(t, fake, Config{})
	r := ts.do("POST", "/api/v1/push", `{"items":[]}`)
	require.Equal(t, 201, r.status)
	require.Equal(t, "[]", string(r.body))
	require.NotContains(t, fake.callList(), "Push")
}

func TestPushBadInputIsRejectedWholeWithTheSpecMessage(t *testing.T) {
	long := strings.Repeat("x", 256)
	cases := []struct {
		name, body, want string
	}{
		{"empty body (spec 0.1)", ``, "Empty request body"},
		{"whitespace body is empty", " \n\t", "Empty request body"},
		{"unparsable JSON (spec 0.1)", `{"items": [`, "Invalid JSON: "},
		{"trailing garbage", `{"items": []} x`, "Invalid JSON: "},
		{"invalid payload JSON", `{"items": [{"queue":"q","payload":{"a" 1}}]}`, "Invalid JSON: "},
		{"items missing (spec 1.2)", `{}`, "items array is required"},
		{"items null", `{"items":null}`, "items array is required"},
		{"items not an array", `{"items":{"queue":"q"}}`, "items array is required"},
		{"body not an object", `[1,2]`, "items array is required"},
		{"queue missing", `{"items":[{"payload":1}]}`, "Queue must be a string"},
		{"item not an object", `{"items":[{"queue":"q"},"q"]}`, "Queue must be a string"},
		{"item null", `{"items":[null]}`, "Queue must be a string"},
		{"queue not a string", `{"items":[{"queue":"a"},{"queue":7}]}`, "Queue must be a string"},
		{"queue null", `{"items":[{"queue":null}]}`, "Queue must be a string"},
		{"partition not a string", `{"items":[{"queue":"q","partition":1}]}`, "Partition must be a string"},
		{"transactionId not a string", `{"items":[{"queue":"q","transactionId":{}}]}`, "TransactionId must be a string"},
		{"traceId not a string", `{"items":[{"queue":"q","traceId":5}]}`, "TraceId must be a string"},
		{"traceId not a UUID (spec 11 #26)", `{"items":[{"queue":"q","traceId":"not-a-uuid"}]}`, "TraceId must be a UUID"},
		{"traceId UUID in braces is not accepted", `{"items":[{"queue":"q","traceId":"{0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01}"}]}`, "TraceId must be a UUID"},
		{"empty queue name", `{"items":[{"queue":""}]}`, "Queue name must not be empty"},
		{"queue over 255 characters (spec 11 #27)", `{"items":[{"queue":"` + long + `"}]}`, "Queue name must be at most 255 characters"},
		{"partition over 255 characters", `{"items":[{"queue":"q","partition":"` + long + `"}]}`, "Partition name must be at most 255 characters"},
		{"transactionId over 255 characters", `{"items":[{"queue":"q","transactionId":"` + long + `"}]}`, "TransactionId must be at most 255 characters"},
		{"spec 0.4: 256 two-byte characters are over 255 characters", `{"items":[{"queue":"` + strings.Repeat("é", 256) + `"}]}`, "Queue name must be at most 255 characters"},
		{"queue not valid UTF-8", "{\"items\":[{\"queue\":\"a\xffb\"}]}", "Queue name must be valid UTF-8"},
		{"partition not valid UTF-8", "{\"items\":[{\"queue\":\"q\",\"partition\":\"a\xffb\",\"payload\":1}]}", "Partition name must be valid UTF-8"},
		{"queue with a lone surrogate escape", `{"items":[{"queue":"a\ud800b"}]}`, "Queue name must be valid UTF-8"},
		{"slash in queue", `{"items":[{"queue":"../../escape"}]}`, "Queue name must not contain '/'"},
		{"dot-dot queue", `{"items":[{"queue":".."}]}`, "Queue name must not be '.' or '..'"},
		{"dot-dot partition", `{"items":[{"queue":"q","partition":".."}]}`, "Partition name must not be '.' or '..'"},
		{"NUL in queue", `{"items":[{"queue":"a\u0000b"}]}`, "Queue name must not contain NUL"},
		{"NUL in partition", `{"items":[{"queue":"q","partition":"a\u0000"}]}`, "Partition name must not contain NUL"},
		// issue 10: a payload is stored and sent back verbatim, so it must be UTF-8 (RFC 8259 8.1).
		{"payload string with a stray byte", "{\"items\":[{\"queue\":\"q\",\"payload\":1},{\"queue\":\"q\",\"payload\":{\"x\":\"\xff\xfe\"}}]}",
			"Invalid payload at items[1]: not valid UTF-8 (byte 6 of the payload)"},
		{"payload key with a stray byte", "{\"items\":[{\"queue\":\"q\",\"payload\":{\"k\x80\":1}}]}",
			"Invalid payload at items[0]: not valid UTF-8 (byte 3 of the payload)"},
		{"payload with a UTF-8 encoded surrogate", "{\"items\":[{\"queue\":\"q\",\"payload\":\"\xed\xa0\x80\"}]}",
			"Invalid payload at items[0]: not valid UTF-8 (byte 1 of the payload)"},
		{"payload with a truncated sequence", "{\"items\":[{\"queue\":\"q\",\"payload\":[\"\xe2\x82\"]}]}",
			"Invalid payload at items[0]: not valid UTF-8 (byte 2 of the payload)"},
		{"payload with an overlong encoding", "{\"items\":[{\"queue\":\"q\",\"payload\":\"\xc0\xaf\"}]}",
			"Invalid payload at items[0]: not valid UTF-8 (byte 1 of the payload)"},
	}
	fake := newFake()
	ts := startServer(t, fake, Config{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.do("POST", "/api/v1/push", c.body)
			require.Equal(t, 400, r.status, "%s", r.body)
			m, ok := r.json(t).(map[string]any)
			require.True(t, ok)
			require.Len(t, m, 1)
			msg, _ := m["error"].(string)
			if strings.HasSuffix(c.want, ": ") {
				require.True(t, strings.HasPrefix(msg, c.want), "got %q", msg)
			} else {
				require.Equal(t, c.want, msg)
			}
		})
	}
	require.NotContains(t, fake.callList(), "Push", "a rejected request changes nothing")
}

func TestPushMaps255ByteNamesAsValid(t *testing.T) {
	fake := newFake()
	ts := startServer(t, fake, Config{})
	name := strings.Repeat("n", 255)
	r := ts.do("POST", "/api/v1/push", `{"items":[{"queue":"`+name+`","partition":"`+name+`","transactionId":"`+name+`"}]}`)
	require.Equal(t, 201, r.status, "%s", r.body)
}

// spec 0.4: names are 1..255 characters; `/` is refused in queue names only; a U+FFFD the
// client really sent is a valid character.
func TestPushAcceptsNamesTheSpecAllows(t *testing.T) {
	cases := []struct {
		name, body             string
		queue, partition, txid string
	}{
		{"255 two-byte characters", `{"items":[{"queue":"` + strings.Repeat("é", 255) + `","transactionId":"` + strings.Repeat("ü", 255) + `"}]}`,
			strings.Repeat("é", 255), "", strings.Repeat("ü", 255)},
		{"a slash in a partition name", `{"items":[{"queue":"q","partition":"eu/west","payload":1}]}`, "q", "eu/west", ""},
		{"an escaped slash in a partition name", `{"items":[{"queue":"q","partition":"eu\/west"}]}`, "q", "eu/west", ""},
		{"a literal U+FFFD", `{"items":[{"queue":"a` + "\uFFFD" + `b"}]}`, "a\uFFFDb", "", ""},
		{"an escaped U+FFFD", `{"items":[{"queue":"a\ufffdb"}]}`, "a\uFFFDb", "", ""},
		{"an escaped surrogate pair", `{"items":[{"queue":"a\ud83d\ude00b"}]}`, "a\U0001F600b", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := newFake()
			ts := startServer(t, fake, Config{})
			r := ts.do("POST", "/api/v1/push", c.body)
			require.Equal(t, 201, r.status, "%s", r.body)
			require.Len(t, fake.pushed, 1)
			require.Equal(t, c.queue, fake.pushed[0].Queue)
			require.Equal(t, c.partition, fake.pushed[0].Partition)
			require.Equal(t, c.txid, fake.pushed[0].TransactionID)
		})
	}
}

func TestBrokerErrorsMapToStatuses(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		status int
		msg    string
	}{
		{"ErrBadRequest is 400 with the broker's message", broker.BadRequest("invalid subscriptionFrom"), 400, "invalid subscriptionFrom"},
		{"ErrNotFound is 404 with the broker's message", broker.NotFound("Partition not found"), 404, "Partition not found"},
		{"ErrClosed is 503", broker.ErrClosed, 503, "Service unavailable: shutting down"},
		{"ErrNotLeader is 503 (issue 15: a write reached a follower)", fmt.Errorf("wrapped: %w", broker.ErrNotLeader), 503, "Service unavailable: this node does not lead its cluster"},
		{"anything else is 500", errors.New("disk on fire"), 500, "disk on fire"},
		{"ErrDamaged is 500 with the broker's short message", fmt.Errorf("wrapped: %w", broker.ErrDamaged), 500, "wrapped: partition damaged"},
		{"absolute paths in a 500 are cut to their base name",
			errors.New("queue q partition a/b: read /var/lib/comb/partitions/0198/00000000000000000001.seg bytes [1,2): bad"), 500,
			"queue q partition a/b: read 00000000000000000001.seg bytes [1,2): bad"},
		{"a path at the start and in quotes is cut too", errors.New(`/data/x/y.seg: open "/data/meta/journal": denied`), 500,
			`y.seg: open "journal": denied`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := newFake()
			fake.onPush = func([]broker.PushItem) ([]broker.PushResult, error) { return nil, c.err }
			ts := startServer(t, fake, Config{})
			r := ts.do("POST", "/api/v1/push", `{"items":[{"queue":"q"}]}`)
			requireJSON(t, r, c.status, `{"error":`+quote(c.msg)+`}`)
		})
	}
}

func quote(s string) string { return string(appendString(nil, s)) }

// Issue 10: a payload with invalid UTF-8 was stored and echoed raw, so the pop response was not
// JSON and a consumer failed on that batch at every redelivery. Now the push is refused whole and
// nothing is stored, for /push and for transaction pushes; valid multi-byte text and escapes
// (a lone surrogate escape too: it is ASCII on the wire) are stored and returned byte for byte.
func TestPayloadMustBeUTF8AgainstTheRealBroker(t *testing.T) {
	ts := startRealServer(t)
	r := ts.do("POST", "/api/v1/push", "{\"items\":[{\"queue\":\"utf\",\"partition\":\"p\",\"transactionId\":\"ok\",\"payload\":1},"+
		"{\"queue\":\"utf\",\"partition\":\"p\",\"transactionId\":\"u1\",\"payload\":{\"x\":\"\xff\xfe\"}}]}")
	requireJSON(t, r, 400, `{"error":"Invalid payload at items[1]: not valid UTF-8 (byte 6 of the payload)"}`)
	r = ts.do("POST", "/api/v1/transaction", "{\"operations\":[{\"type\":\"push\",\"items\":[{\"queue\":\"utf\",\"partition\":\"p\",\"payload\":\"\xc3\"}]}]}")
	requireJSON(t, r, 400, `{"error":"Invalid payload at operations[0].items[0]: not valid UTF-8 (byte 1 of the payload)"}`)
	r = ts.do("GET", "/api/v1/pop/queue/utf?autoAck=true", "")
	require.Equal(t, 204, r.status, "nothing of either request was stored: %s", r.body)

	payload := `{"s":"h\u00e9llo héllo 😀","l":"\ud800","t":"\t"}`
	r = ts.do("POST", "/api/v1/push", `{"items":[{"queue":"utf","partition":"p","payload":`+payload+`}]}`)
	require.Equal(t, 201, r.status, "%s", r.body)
	r = ts.do("GET", "/api/v1/pop/queue/utf?autoAck=true", "")
	require.Equal(t, 200, r.status)
	require.Contains(t, string(r.body), `"data":`+payload+`,`, "stored and returned verbatim")
	require.True(t, json.Valid(r.body))
}
