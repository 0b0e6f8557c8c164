package httpapi

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// scanPushSeeds are bodies on both sides of scanPush's shape: those it reads and those it
// leaves to goccy (each its own reason).
var scanPushSeeds = []string{
	`{"items":[{"queue":"q","payload":{"a":1}}]}`,
	`{"items":[{"queue":"q","partition":"p","transactionId":"t","traceId":"0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01","payload":[1,"2",null]}]}`,
	` { "bufferMs" : 10 , "items" : [ { "queue" : "q" , "payload" : "x" } , {"queue":"q","partition":"p2","payload":-0.5e+3} ] } `,
	`{"items":[]}`, `{"items":[],"x":{"y":[true,false,null]}}`, `{}`, `{"items":{}}`, `[]`, `{"items":null}`,
	`{"items":[{"queue":1}]}`, `{"items":[{"queue":null}]}`, `{"items":[{"partition":"p"}]}`,
	`{"items":[{"queue":"q","payload":null}]}`, `{"items":[{"queue":"q","payload":1},]}`, `{"items":[{"queue":"q"}],}`,
	`{"Items":[{"queue":"q"}]}`, `{"items":[{"Queue":"q"}]}`, `{"items":[{"queue":"a","queue":"b"}]}`,
	`{"items":[{"queue":"q"}],"items":[]}`, `{"\u0069tems":[]}`, `{"items":[{"qu\u0065ue":"q"}]}`,
	`{"items":[{"queue":"q\u0000"}]}`, `{"items":[{"queue":"é"}]}`, `{"items":[{"queue":".."}]}`,
	`{"items":[{"queue":"q","payload":"\ud800"}]}`, `{"items":[{"queue":"q","payload":01}]}`,
	`{"items":[{"queue":"q","payload":1.}]}`, `{"items":[{"queue":"q","payload":"\x"}]}`,
	`{"items":[{"queue":"q","traceId":"nope"}]}`, `{"items":[{"queue":"q","payload":{"a":1}}]} x`,
	"{\"items\":[{\"queue\":\"q\",\"payload\":{\"x\":\"\xff\xfe\"}}]}", "{\"items\":[{\"queue\":\"q\",\"payload\":\"a\tb\"}]}",
	``, `{`, `{"items":[{"queue":"q","payload":[[[[[[[[[[1]]]]]]]]]]}]}`,
}

func requireScanMatchesGoccy(t *testing.T, body []byte) {
	t.Helper()
	items, ok := scanPush(body)
	if !ok {
		return
	}
	fast, fastMsg := checkScannedPush(items, body)
	slow, slowMsg := decodePushGoccy(body)
	require.Equal(t, slowMsg, fastMsg, "body %q", body)
	require.Equal(t, slow, fast, "body %q", body)
}

// The seeds: where scanPush reads a body, decodePush's answer is goccy's, exactly.
func TestScanPushMatchesGoccy(t *testing.T) {
	for _, s := range scanPushSeeds {
		requireScanMatchesGoccy(t, []byte(s))
	}
}

// The bodies clients send take the fast path; the rest go to goccy.
func TestScanPushShape(t *testing.T) {
	for _, tc := range []struct {
		body string
		fast bool
	}{
		{string(appendBenchPushBody(nil, "p1", 7)), true},
		{`{"items":[]}`, true},
		{` { "bufferMs" : 10 , "items" : [ { "queue" : "q" , "payload" : "x" } ] } `, true},
		{`{"items":[{"queue":"q","payload":null}]}`, false}, // goccy's RawMessage rule for null
		{`{"Items":[]}`, false},                                   // goccy matches keys ignoring case
		{`{"items":[{"queue":"q","queue":"r"}]}`, false},          // a repeated key
		{`{"items":[{"queue":"é"}]}`, false},                      // a name past ASCII
		{`{"items":[{"queue":"q","payload":01}]}`, false},         // not JSON
		{`{"items":[{"queue":"q","transactionId":null}]}`, false}, // not a string
	} {
		_, ok := scanPush([]byte(tc.body))
		require.Equal(t, tc.fast, ok, tc.body)
	}
}

// A scanned body's items do not alias the request buffer (fasthttp reuses it), and equal
// queue and partition names share one string.
func TestScanPushOwnsItsBytes(t *testing.T) {
	body := appendBenchPushBody(nil, "p1", 7)
	items, ok := scanPush(body)
	require.True(t, ok)
	require.Len(t, items, 100)
	want := string(items[3].Payload) + items[3].TransactionID
	for i := range body {
		body[i] = 'z'
	}
	require.Equal(t, want, string(items[3].Payload)+items[3].TransactionID)
	require.Equal(t, "run1-w3-"+strconv.Itoa(10), items[3].TransactionID)
	require.Equal(t, "bench", items[99].Queue)
	require.Equal(t, "p1", items[99].Partition)
}

// Payloads of every JSON kind take the fast path and are stored verbatim, as goccy gives them.
func TestScanPushPayloadsVerbatim(t *testing.T) {
	for _, p := range []string{`1e5`, `-0`, `1E+2`, `0.25e-7`, `"\u00e9\/\"\\\b\f\n\r\t"`, `"é 😀"`, `[ ]`, `{ }`,
		`[1, [2, {"a" : [ ]}], "x"]`, `{"a":{"b":{"c":true}},"d":false}`, `"\uD83D\uDE00"`, `""`} {
		body := []byte(`{"items":[{"queue":"q","payload":` + p + ` }]}`)
		items, ok := scanPush(body)
		require.True(t, ok, p)
		require.Equal(t, p, string(items[0].Payload))
		requireScanMatchesGoccy(t, body)
	}
}
