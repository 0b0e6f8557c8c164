package fsck

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/notes"
	"github.com/combmq/comb/vfs"
)

// dirNotes is the notes store's directory (deletion tombstones and trace
// events, package notes; broker/note_store.go).
const dirNotes = layout.Notes

// checkNotes reads <data>/notes/log with notes.Check, the decoder and tail
// rule the server's notes.Open applies at start-up: what Open refuses is
// damage (exit 2), what it cuts is repairable (exit 1, and --repair cuts it
// with notes.Open itself, keeping the bytes in quarantine/notes/ as the
// server does).
func (c *checker) checkNotes() {
	dir := filepath.Join(c.dir, dirNotes)
	rel := filepath.Join(dirNotes, notes.FileName)
	v, err := notes.Check(vfs.OS, dir)
	var de *notes.DamageError
	switch {
	case errors.As(err, &de):
		c.rep.add(Finding{Kind: KindNotesCorrupt, Severity: SeverityDamaged, File: rel, StartByte: de.Start, EndByte: de.End,
			Detail: de.Reason + " (the server refuses to start with it: cutting would lose acknowledged deletions and trace events)"})
		return
	case err != nil:
		c.rep.add(Finding{Kind: KindUnreadable, Severity: SeverityDamaged, File: rel, Detail: err.Error()})
		return
	case !v.Repaired():
		return
	}
	f := Finding{Kind: KindNotesTornTail, Severity: SeverityRepairable, File: rel, StartByte: v.End, EndByte: v.Size}
	keep := filepath.Join(dirQuarantine, dirNotes, fmt.Sprintf("%s.from-%d", notes.FileName, v.End))
	switch {
	case v.Recreate:
		f.Detail = fmt.Sprintf("%d bytes without a whole header (a crash while creating the file; no note follows a header that is not durable)", v.Size)
		f.Repair = "write the file afresh with a new header, as the server does at start"
	case v.Tail == "zeros":
		f.Detail = fmt.Sprintf("%d zero bytes after the last of %d whole records", v.Size-v.End, v.Records)
		f.Repair = fmt.Sprintf("cut %s at byte %d, as the server does at start", rel, v.End)
	case v.Tail == "damaged":
		f.Detail = fmt.Sprintf("the last record (bytes %d..%d) is whole but fails its checksum, after %d whole records: a torn write, or damage to an acknowledged note (the commit log replays it at start if it still holds it)", v.End, v.Size, v.Records)
		f.Repair = fmt.Sprintf("copy bytes %d..%d to %s and cut %s at byte %d, as the server does at start", v.KeptFrom, v.KeptTo, keep, rel, v.End)
	default:
		f.Detail = fmt.Sprintf("ends in %d bytes of an incomplete record after %d whole records (a crash mid-append: never acknowledged)", v.Size-v.End, v.Records)
		f.Repair = fmt.Sprintf("copy bytes %d..%d to %s and cut %s at byte %d, as the server does at start", v.KeptFrom, v.KeptTo, keep, rel, v.End)
	}
	c.plan(f, repairPlan{run: c.repairNotes})
}

// repairNotes opens the notes store as the server's start-up does, which
// cuts the tail (after copying it to quarantine/notes/) or writes a file
// without a whole header afresh, with its syncs.
func (c *checker) repairNotes() error {
	s, _, err := notes.Open(vfs.OS, filepath.Join(c.dir, dirNotes),
		notes.Options{QuarantineDir: filepath.Join(c.dir, dirQuarantine, dirNotes)})
	if err != nil {
		return err
	}
	return s.Close()
}
