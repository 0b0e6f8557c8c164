package commitlog

import (
	"fmt"

	"github.com/combmq/comb/record"
)

// tailVerdict is what the tail rule makes of the bytes after a file's last
// verified batch.
type tailVerdict int

const (
	tailKeep tailVerdict = iota // nothing to do: the end, or preallocated zeros
	tailCut                     // a torn write: copied to quarantine, then zeroed
)

// judgeTail is the commit log's tail rule (package comment, "Recovery"),
// shared by Open and Inspect so that comb fsck judges a file exactly as the
// server's start-up does. sc is record.Scan's verdict on the bytes after the
// header (hlen bytes), size the file's size; newest says the log writes
// into the file; prealloc says its preallocation was synced before any
// batch went into it (every policy but SyncNever), strict that a torn batch
// cannot have a verified batch after it (SyncAlways).
//
// A newest file shorter than its preallocation is damage (ErrShortFile): a
// batch running past the end of the file (TailTorn), or a file ending right
// after a batch with no zero byte after it (TailClean; tailGuard). A crash
// tears a batch inside the preallocated zeros (TailDamaged, or TailTorn
// under SyncNever), which is cut.
//
// Errors: ErrCorrupt (wrapped, naming the file and the byte range), with
// ErrShortFile for a cut file.
func judgeTail(name string, newest bool, sc record.Scan, hlen, size int64, prealloc, strict bool) (tailVerdict, error) {
	end, dataEnd := hlen+sc.End, hlen+sc.DataEnd
	switch {
	case sc.Tail == record.TailZeros:
		return tailKeep, nil
	case !newest && sc.Tail == record.TailClean:
		return tailKeep, nil // filled and moved past: the next file holds the next LSN
	case !newest:
		return tailKeep, fmt.Errorf("%w: %s: bytes [%d,%d) after its last batch (%s) in a file the log had moved past", ErrCorrupt, name, end, dataEnd, sc.Tail)
	case prealloc && sc.Tail == record.TailTorn:
		return tailKeep, fmt.Errorf("%w: %s is %w: the batch at byte %d runs past the end of the file at byte %d (bytes [%d,%d)); its preallocation was synced before any batch went into it, so the file was cut and the batches it held from byte %d on are lost (acknowledged); the bytes are kept, run comb fsck",
			ErrCorrupt, name, ErrShortFile, end, size, end, size, end)
	case prealloc && sc.Tail == record.TailClean:
		return tailKeep, fmt.Errorf("%w: %s is %w: it ends at byte %d right after its last batch (or its header), with none of the zero bytes that always follow the last batch; the file was cut there and the batches after it are lost (acknowledged); the bytes are kept, run comb fsck",
			ErrCorrupt, name, ErrShortFile, end)
	case sc.Tail == record.TailClean:
		return tailKeep, nil // sync never: the preallocation may be lost with the batches
	case sc.Tail == record.TailCorrupt && strict:
		return tailKeep, fmt.Errorf("%w: %s: bytes [%d,%d) are damaged and a verified batch follows them (not a torn write under sync always; run comb fsck)", ErrCorrupt, name, end, hlen+sc.Resync)
	}
	return tailCut, nil
}
