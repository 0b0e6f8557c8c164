package replay

import "testing"

// FuzzDumpLine: any line of a dump file decodes or fails with ErrBadDump, never
// panics, and an accepted record has names and a JSON payload.
func FuzzDumpLine(f *testing.F) {
	f.Add([]byte(`{"type":"record","queue":"q","partition":"p","offset":3,"transactionId":"t","traceId":null,"tsMicros":1,"payloadBytes":2,"payload":{}}`))
	f.Add([]byte(`{"type":"segment","partitionId":"x","firstOffset":1}`))
	f.Add([]byte(`{"type":"record","queue":"q","partition":"p","payloadBytes":5}`))
	f.Add([]byte(`{"type":"record","queue":"","partition":"p","payload":1}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, ok, err := parseDumpLine(b)
		if ok && (err != nil || rec.Queue == "" || rec.Partition == "") {
			t.Fatalf("accepted a record without names or with an error: %+v %v", rec, err)
		}
	})
}

// FuzzReplayState: a resume-state file of any bytes decodes or errors, never panics.
func FuzzReplayState(f *testing.F) {
	f.Add([]byte(`{"target":"http://a","source":"/d","partitions":{"q\u0000p":12}}`))
	f.Add([]byte(`{"partitions":null}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeReplayState(b)
	})
}
