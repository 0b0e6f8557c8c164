package httpapi

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeTrace: any body decodes or is refused with a message; what decodes has both ids,
// compact valid JSON data that is not null, and no empty trace name.
func FuzzDecodeTrace(f *testing.F) {
	f.Add([]byte(`{"transactionId":"t","partitionId":"p","traceNames":["a",""],"data":{"x": [1, 2]}}`))
	f.Add([]byte(`{"transactionId":"t","partitionId":"p","traceNames":"a","eventType":"error","data":"s"}`))
	f.Add([]byte(`{"transactionId":"t","partitionId":"p","traceNames":5,"data":1}`))
	f.Add([]byte(`{"transactionId":1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, msg := decodeTrace(body)
		if msg != "" {
			return
		}
		if req.TransactionID == "" || req.PartitionID == "" || !json.Valid(req.Data) || string(req.Data) == "null" {
			t.Fatalf("accepted %q as %+v", body, req)
		}
		for _, n := range req.Names {
			if n == "" {
				t.Fatalf("empty trace name from %q", body)
			}
		}
	})
}
