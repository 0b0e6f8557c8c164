package fsck

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/combmq/comb/segment/dedup"
)

// runVerdict is what checkDedupRuns says about one sealed dedup run file.
type runVerdict struct {
	File   string // base name in the log's directory
	Size   int64  // the file's bytes (a run is checked whole: the damage is the file)
	Kind   Kind   // KindDedupDamaged or KindDedupStale
	Detail string
}

// checkDedupRuns verifies every sealed dedup run of dir (docs/format.md 4.2)
// whole, with the decoder the log's load uses (dedup.CheckRun: header, every
// page's check, entry order, the name against the header). A run that fails is damage: the
// load deletes it and every later run and re-indexes their offsets from the
// segments, so no transactionId can be stored twice, and a repair's reopen does
// the same now. A ".run.tmp" is a run write a crash interrupted (stale: the
// load removes it). Overlapping runs are not judged: a crash in a merge leaves
// the merged run beside its inputs, and the load keeps the one that reaches
// furthest.
func checkDedupRuns(dir string, s *logScan) {
	if s.Region != nil && s.Region.Err != nil {
		return // the server takes the log out of service, caches and all
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return // the segment scan reported the directory already
	}
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "dedup-") && !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if v := checkRunFile(dir, name); v != nil {
			s.DedupRuns = append(s.DedupRuns, *v)
		}
	}
}

// checkRunFile judges one file named dedup-*: nil when it is a whole run or
// not a run file at all.
func checkRunFile(dir, name string) *runVerdict {
	if stem, ok := strings.CutSuffix(name, ".tmp"); ok {
		if _, _, ok := dedup.ParseRunName(stem); ok {
			return &runVerdict{File: name, Kind: KindDedupStale, Detail: "a dedup run write a crash interrupted (removed on the next load)"}
		}
		return nil
	}
	first, last, ok := dedup.ParseRunName(name)
	if !ok {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return &runVerdict{File: name, Kind: KindDedupDamaged, Detail: fmt.Sprintf("dedup run unreadable: %v", err)}
	}
	if _, err := dedup.CheckRun(b, first, last, nil); err != nil {
		return &runVerdict{File: name, Size: int64(len(b)), Kind: KindDedupDamaged,
			Detail: fmt.Sprintf("dedup run fails its check (%v); the server removes it and re-indexes its offsets from the segments at its first push", err)}
	}
	return nil
}
