package httpapi

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fastjson"

	"github.com/combmq/comb/broker"
)

func TestDecodeAckBatchFastTakesPlainBodiesAndLeavesTheRest(t *testing.T) {
	const pid = "0198e4c1-0000-7000-8000-00000000aa01"
	cases := []struct {
		name string
		body string
		fast bool
	}{
		{"plain batch", `{"consumerGroup":"g","acknowledgments":[{"transactionId":"t1","partitionId":"` + pid + `","leaseId":"l","status":"completed"},{"transactionId":"t2","partitionId":"` + pid + `","status":"failed","error":"boom"}]}`, true},
		{"null group and fields, extra keys", ` {"consumerGroup":null,"x":[1,{"y":"z"}],"acknowledgments":[{"transactionId":"t","partitionId":"p","leaseId":null,"status":null,"error":null,"consumerGroup":"ignored"}]} `, true},
		{"no group", `{"acknowledgments":[{"transactionId":"t","partitionId":"p"}]}`, true},
		{"empty list", `{"acknowledgments":[]}`, true},
		{"escape in a field", `{"acknowledgments":[{"transactionId":"t\"","partitionId":"p"}]}`, false},
		{"empty transactionId", `{"acknowledgments":[{"transactionId":"","partitionId":"p"}]}`, false},
		{"missing partitionId", `{"acknowledgments":[{"transactionId":"t"}]}`, false},
		{"number status", `{"acknowledgments":[{"transactionId":"t","partitionId":"p","status":1}]}`, false},
		{"duplicate key", `{"acknowledgments":[{"transactionId":"t","transactionId":"u","partitionId":"p"}]}`, false},
		{"bad group", `{"consumerGroup":"..","acknowledgments":[]}`, false},
		{"group not a string", `{"consumerGroup":1,"acknowledgments":[]}`, false},
		{"acknowledgments not an array", `{"acknowledgments":{}}`, false},
		{"missing acknowledgments", `{"consumerGroup":"g"}`, false},
		{"item not an object", `{"acknowledgments":[1]}`, false},
		{"trailing bytes", `{"acknowledgments":[]}]`, false},
		{"not an object", `[]`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, ok := decodeAckBatchFast([]byte(c.body))
			require.Equal(t, c.fast, ok)
			gi, gg, gm := decodeAckBatch([]byte(c.body))
			wi, wg, wm := decodeAckBatchSlow([]byte(c.body))
			require.Equal(t, wm, gm, "the same answer as the fastjson path")
			require.Equal(t, wg, gg)
			require.Equal(t, wi, gi)
		})
	}
}

func TestDecodeAckBatchFastCopiesOutOfTheRequestBuffer(t *testing.T) {
	body := []byte(`{"consumerGroup":"g","acknowledgments":[{"transactionId":"t1","partitionId":"p","leaseId":"l","status":"retry","error":"e"}]}`)
	items, group, msg := decodeAckBatch(body)
	require.Empty(t, msg)
	for i := range body {
		body[i] = 'X'
	}
	require.Equal(t, "g", group)
	require.Equal(t, []broker.AckItem{{TransactionID: "t1", PartitionID: "p", LeaseID: "l", Status: "retry", Error: "e"}}, items)
}

// FuzzDecodeAckBatchFastMatchesFallback: the fast path accepts only what fastjson accepts, and
// decodeAckBatch answers exactly like the fastjson path on every input.
func FuzzDecodeAckBatchFastMatchesFallback(f *testing.F) {
	for _, s := range []string{
		`{"consumerGroup":"g","acknowledgments":[{"transactionId":"t","partitionId":"p","leaseId":"l","status":"completed"}]}`,
		`{"acknowledgments":[{"transactionId":"t","partitionId":"p","error":null,"n":[1.5e2,true]}]}`,
		`{"acknowledgments":[]}`, `{"consumerGroup":null,"acknowledgments":[{}]}`,
		`{"acknowledgments":[{"transactionId":"t","partitionId":"p","status":"\u00e9"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _, ok := decodeAckBatchFast(append([]byte(nil), body...))
		gi, gg, gm := decodeAckBatch(append([]byte(nil), body...))
		wi, wg, wm := decodeAckBatchSlow(append([]byte(nil), body...))
		require.Equal(t, wm, gm, "%q", body)
		require.Equal(t, wg, gg, "%q", body)
		require.Equal(t, wi, gi, "%q", body)
		if ok {
			var p fastjson.Parser
			_, err := p.ParseBytes(body)
			require.NoError(t, err, "fast path accepted what fastjson rejects: %q", body)
		}
	})
}

func BenchmarkDecodeAckBatch100Fallback(b *testing.B) {
	body := ackBody100()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, msg := decodeAckBatchSlow(body); msg != "" {
			b.Fatal(msg)
		}
	}
}
