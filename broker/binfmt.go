package broker

import "github.com/combmq/comb/record"

// The broker's own small binary records (redo records in the cursor
// journal, DLQ metadata in a record's extra field) are decoded with
// record.Fields; metaReader adds the composite fields (tx_redo.go).
type metaReader struct{ record.Fields }

func appendString(b []byte, s string) []byte { return record.AppendString(b, s) }
