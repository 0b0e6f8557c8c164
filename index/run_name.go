package index

import (
	"fmt"
	"strconv"
	"strings"
)

// RunFileName is the name of the sealed dedup run covering offsets
// first..last: "dedup-<20 digits>-<20 digits>.run" (docs/format.md 4.2).
func RunFileName(first, last uint64) string {
	return fmt.Sprintf("dedup-%020d-%020d.run", first, last)
}

// ParseRunFileName reads the offsets out of a run file's name; ok is false
// for any other name (a ".tmp" sibling included).
func ParseRunFileName(name string) (first, last uint64, ok bool) {
	rest, found := strings.CutPrefix(name, "dedup-")
	if !found || len(rest) != 20+1+20+4 || rest[20] != '-' || !strings.HasSuffix(rest, ".run") {
		return 0, 0, false
	}
	a, err1 := strconv.ParseUint(rest[:20], 10, 64)
	b, err2 := strconv.ParseUint(rest[21:41], 10, 64)
	if err1 != nil || err2 != nil || a == 0 || a > b {
		return 0, 0, false
	}
	return a, b, true
}
