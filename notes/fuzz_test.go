package notes

import (
	"bytes"
	"testing"

	"github.com/combmq/comb/vfs"
)

// FuzzOpen: any file contents open or fail without panicking; what opens
// holds only whole records, and opening again finds the same file.
func FuzzOpen(f *testing.F) {
	mem := vfs.NewMem()
	s, _, err := Open(mem, "/n", Options{})
	if err != nil {
		f.Fatal(err)
	}
	tr := trace(1, 2, 3, -5, "a", "b")
	tr.WorkerID = "w"
	_ = s.AddTrace(tr)
	_, _ = s.Delete(MessageRef{pid(1), 300})
	s.Close()
	f.Add(mem.Bytes("/n/log"))
	f.Add([]byte("CMNH"))
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := vfs.NewMem()
		mem.SetBytes("/n/log", data)
		s, _, err := Open(mem, "/n", Options{})
		if err != nil {
			return
		}
		s.Close()
		once := mem.Bytes("/n/log")
		s, rep, err := Open(mem, "/n", Options{})
		if err != nil || rep.CutBytes != 0 {
			t.Fatalf("second open: %+v %v", rep, err)
		}
		s.Close()
		if !bytes.Equal(mem.Bytes("/n/log"), once) {
			t.Fatal("second open changed the file")
		}
	})
}
