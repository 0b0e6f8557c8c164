package notes

import (
	"bytes"
	"testing"
)

// FuzzRecords: any file contents decode without panicking, and whatever
// decodes re-encodes to the same bytes.
func FuzzRecords(f *testing.F) {
	f.Add(appendRecord(nil, encodeTombstone(MessageRef{pid(1), 300})))
	tr := trace(1, 2, 3, -5, "a", "b")
	tr.WorkerID = "w"
	f.Add(appendRecord(appendRecord(nil, encodeTrace(&tr)), encodeTombstone(MessageRef{})))
	f.Fuzz(func(t *testing.T, data []byte) {
		for len(data) > 0 {
			rec, n, ok := nextRecord(data)
			if !ok {
				return
			}
			var body []byte
			if rec.trace != nil {
				body = encodeTrace(rec.trace)
			} else {
				body = encodeTombstone(rec.ref)
			}
			if !bytes.Equal(appendRecord(nil, body), data[:n]) {
				// Only trailing bytes inside a body (ignored fields) may differ.
				if got := appendRecord(nil, body); len(got) >= n {
					t.Fatalf("re-encoding differs: %x vs %x", got, data[:n])
				}
			}
			data = data[n:]
		}
	})
}
