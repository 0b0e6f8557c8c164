package fsck

import (
	"bytes"
	"testing"
)

// FuzzManifest: any manifest bytes decode to the well-formed lines, never panic.
func FuzzManifest(f *testing.F) {
	f.Add([]byte("{\"partitionId\":\"x\",\"moved\":\"quarantine/a\",\"firstOffset\":1,\"lastOffset\":9}\n{\"torn"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseManifest(bytes.NewReader(b))
	})
}
