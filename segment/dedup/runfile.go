package dedup

import (
	"fmt"

	"github.com/combmq/comb/index"
)

// CheckRun verifies a whole run file's bytes b (docs/format.md 4.2) as the
// load does: its header, every page's check, entry order, the file's length,
// and the offsets first..last its name gives (ParseRunName) against the
// header's. fn, when not nil, gets each entry in file order (hash, offset
// ascending); on error it may have been given some. It is the one decoder
// of run files: the load and `comb fsck` (dedup_damaged) both use it.
//
// Errors wrap index.ErrRun.
func CheckRun(b []byte, first, last uint64, fn func(index.RunEntry)) (index.RunHeader, error) {
	var each func(int, index.RunEntry)
	if fn != nil {
		each = func(_ int, e index.RunEntry) { fn(e) }
	}
	hdr, err := index.ScanRun(b, each)
	if err == nil && (hdr.First != first || hdr.Last != last) {
		err = fmt.Errorf("%w: header says offsets %d..%d, the name %d..%d", index.ErrRun, hdr.First, hdr.Last, first, last)
	}
	return hdr, err
}

// ParseRunName returns the offsets a run file's name "dedup-F-L.run" gives
// (index.RunFileName); ok is false for any other name, ".run.tmp" included.
func ParseRunName(name string) (first, last uint64, ok bool) { return index.ParseRunFileName(name) }
