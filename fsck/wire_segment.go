package fsck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/index"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/segment"
)

// dedupFile is a log's dedup index (docs/format.md).
const dedupFile = "dedup.idx"

// listSegFiles returns the segment files of dir sorted by first offset
// (datadir.ListSegFiles), for a scan to fill in what each holds.
func listSegFiles(dir string) ([]fileSummary, error) {
	files, err := datadir.ListSegFiles(dir)
	if err != nil {
		return nil, err
	}
	out := make([]fileSummary, len(files))
	for i, f := range files {
		out[i] = fileSummary{SegFile: f}
	}
	return out, nil
}

// scanLog verifies one segment.Log directory read-only with segment.Verify, then
// checks each index file and the dedup index against what Verify found. onBytes is
// called with the directory's segment bytes once it is scanned (progress).
func scanLog(dir string, onBytes func(int64)) (*logScan, error) {
	return scanLogBelow(dir, nil, onBytes)
}

// durableRegion is the part of a log written behind the commit log that its
// server trusts (datadir.Rule.KeepBelow): the offsets below Keep. What the
// files hold from Keep on (Cut: what segment.OpenFrom would cut) was written
// unsynced and is not judged.
type durableRegion struct {
	Keep uint64
	Cut  segment.UnsyncedCut
	// Err is segment.PlanFrom's refusal: offsets below Keep are missing or
	// damaged, or a segment straddles Keep (the server takes the log out of
	// service).
	Err error
}

// unsynced reports whether damage found by Verify lies in what the server
// cuts: files named at or after Keep, and the bytes of the cut file from the
// cut on. Without a plan (PlanFrom refused) the cut is not known: damage in
// the file holding Keep-1 counts as unsynced when its first offset is at or
// after Keep.
func (r *durableRegion) unsynced(files []fileSummary, d damage) bool {
	base := uint64(0)
	for _, f := range files {
		if f.Name == d.File {
			base = f.FirstOffset
		}
	}
	switch {
	case base >= r.Keep:
		return true
	case r.Err != nil:
		return d.FirstOffset >= r.Keep
	case r.Cut.File != "" && filepath.Base(r.Cut.File) == d.File:
		return d.StartByte >= r.Cut.At && !d.Gap
	}
	return false
}

// scanLogBelow is scanLog for a log its server opens below a keep offset
// (region non-nil): damage below it is judged as usual, what lies past it is
// counted in Unsynced, not judged, and NextOffset is the keep offset (where
// the server's replay of the commit log continues).
func scanLogBelow(dir string, region *durableRegion, onBytes func(int64)) (*logScan, error) {
	files, err := listSegFiles(dir)
	if err != nil {
		return nil, err
	}
	var dmg []*segment.CorruptionError
	st, err := segment.Verify(dir, func(ce *segment.CorruptionError) { dmg = append(dmg, ce) })
	if err != nil {
		return nil, err
	}
	s := &logScan{Files: files, FirstOffset: st.FirstOffset, NextOffset: st.NextOffset,
		Segments: int64(st.Segments), Records: int64(st.Records), Region: region,
		ScannedFiles: st.Files, ScannedBytes: st.Bytes}
	if onBytes != nil {
		onBytes(st.Bytes)
	}
	if len(files) == 0 {
		if region != nil && region.Err == nil {
			s.NextOffset = region.Keep
		}
		return s, nil
	}
	newest := files[len(files)-1]
	for i := range files {
		files[i].Sealed = i < len(files)-1
		if files[i].Sealed {
			files[i].LastOffset = files[i+1].FirstOffset - 1
		} else if s.NextOffset > files[i].FirstOffset {
			files[i].LastOffset = s.NextOffset - 1
		}
	}
	for i, ce := range dmg {
		d := damage{File: filepath.Base(ce.File), StartByte: ce.StartByte, EndByte: ce.EndByte,
			FirstOffset: ce.FirstOffset, LastOffset: ce.LastOffset, Reason: ce.Reason, Tail: ce.Tail}
		d.Gap = ce.StartByte == 0 && ce.EndByte == 0
		switch {
		case region != nil && region.unsynced(files, d):
			continue
		case d.Gap:
			// Verify's report of a file that does not start where the previous ended:
			// the previous file really ends before the gap.
			s.Corrupt = append(s.Corrupt, d)
			for j := 1; j < len(files); j++ {
				if files[j].Name == d.File && files[j].FirstOffset > d.FirstOffset {
					files[j-1].LastOffset = d.FirstOffset - 1
				}
			}
		case region == nil && i == len(dmg)-1 && d.File == newest.Name && ce.EndByte == newest.Bytes && ce.Tail != record.TailCorrupt:
			// The damage runs to the end of the newest file and no whole segment
			// follows it (Verify resyncs past damage): what Open cuts as a torn
			// tail (a whole segment out of order there is not one). Below a
			// commit log there is no torn tail: those bytes were synced.
			s.Torn = &d
		default:
			s.Corrupt = append(s.Corrupt, d)
		}
	}
	if region != nil {
		s.keepRegion(region)
	}
	checkIndexes(dir, s)
	checkDedup(dir, s)
	checkDedupRuns(dir, s)
	if s.PendingSplits, s.SplitCopies, err = segment.PendingSplits(dir); err != nil {
		return nil, err
	}
	return s, nil
}

// keepRegion leaves in s only what the server keeps of a log below region.Keep:
// the files named below it (the last one ending at Keep-1) and the next offset
// Keep, where the replay continues (or, when offsets below Keep are missing,
// where the data found ends).
func (s *logScan) keepRegion(region *durableRegion) {
	kept := s.Files[:0]
	for _, f := range s.Files {
		if f.FirstOffset < region.Keep {
			kept = append(kept, f)
		}
	}
	s.Files = kept
	s.Unsynced = region.Cut.Bytes + region.Cut.RemovedBytes
	if region.Err != nil {
		s.NextOffset = min(s.NextOffset, region.Keep)
	} else {
		s.NextOffset = region.Keep
	}
	if n := len(s.Files); n > 0 {
		last := &s.Files[n-1]
		last.Sealed = false
		last.LastOffset = 0
		if s.NextOffset > last.FirstOffset {
			last.LastOffset = s.NextOffset - 1
		}
	}
	if s.FirstOffset == 0 || s.FirstOffset >= region.Keep {
		s.FirstOffset = region.Keep // nothing kept: the log starts again at Keep
	}
}

// checkIndexes compares each "<base>.idx" with the segment file it describes: a valid
// header for that file, a chain of entries starting at the file's first offset and
// ending exactly where the file's offsets end, positions inside the file, and in all
// as many entries as Verify found segments. Anything else is an index Open rebuilds.
func checkIndexes(dir string, s *logScan) {
	var entries int64
	damagedFiles := map[string]bool{}
	for _, d := range s.Corrupt {
		damagedFiles[d.File] = true
	}
	for _, f := range s.Files {
		name := f.IndexName()
		if r := s.Region; r != nil && r.Cut.File != "" && filepath.Base(r.Cut.File) == f.Name {
			// The server's OpenFrom cuts this file at Keep and rebuilds its
			// index from what is left: entries past Keep are not stale.
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			if !f.Sealed {
				// The active file's index lives in memory until it is due
				// (segment.LazyIndexSegments): no file is legal below that.
				if n, ok, oerr := segment.IndexOptional(filepath.Join(dir, f.Name)); oerr == nil && ok {
					entries += int64(n)
					continue
				}
			}
			if f.Bytes > 0 {
				s.MissingIndexes = append(s.MissingIndexes, name)
			}
			continue
		}
		if err != nil || index.CheckHeader(b, f.FirstOffset) != nil {
			s.StaleIndexes = append(s.StaleIndexes, name)
			continue
		}
		body := b[index.HeaderSize:]
		n := index.ValidEntries(body, f.FirstOffset)
		entries += int64(n)
		end := f.FirstOffset // one past the last offset the index covers
		var lastPos int64 = -1
		if n > 0 {
			e, _ := index.DecodeEntry(body[(n-1)*index.EntrySize:])
			end, lastPos = e.Last()+1, e.Pos
		}
		want := f.LastOffset + 1
		if f.LastOffset == 0 {
			want = f.FirstOffset
		}
		if damagedFiles[f.Name] {
			continue // the file itself is reported; its index is rebuilt after repair
		}
		if end != want || lastPos >= f.Bytes {
			s.StaleIndexes = append(s.StaleIndexes, name)
		}
	}
	if s.Region == nil && len(s.Corrupt) == 0 && len(s.StaleIndexes) == 0 && len(s.MissingIndexes) == 0 && entries != s.Segments {
		s.StaleIndexes = append(s.StaleIndexes, fmt.Sprintf("(%d index entries for %d segments)", entries, s.Segments))
	}
}

// checkDedup reads dedup.idx as the log's load will (index.ScanDedup): a missing file
// is fine (it is built on first use). Damage to the file (a failing header, or an entry
// that fails its check with verified entries after it) is reported as such; a torn or
// failing last entry, trailing zeros, entries past the high-water mark (what a crash
// leaves, the file is never synced) or a file of an older version make it stale. Either
// way the load keeps the verified entries before the first failure and re-indexes the
// rest from the segments, so nothing is lost; damage says the disk deserves a look.
func checkDedup(dir string, s *logScan) {
	if s.Region != nil && s.Region.Err != nil {
		return // offsets the server must keep are missing: it takes the log out of service, cache and all
	}
	b, err := os.ReadFile(filepath.Join(dir, dedupFile))
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		s.Dedup = &dedupVerdict{Kind: KindDedupDamaged, Detail: fmt.Sprintf("unreadable: %v", err)}
		return
	}
	past := false
	var lastHash, lastOff uint64 // the last entry inside the log's offsets
	scan, herr := index.ScanDedup(b, func(_ int, h, off uint64) {
		if s.Region != nil && off >= s.Region.Keep {
			return // the server's OpenFrom drops these entries with the unsynced bytes
		}
		if off >= s.NextOffset {
			past = true
		} else if off >= s.FirstOffset {
			lastHash, lastOff = h, off
		}
	})
	foreign := false
	if herr == nil && lastOff != 0 {
		// As the log's load does: verified entries of another log (a copied or
		// restored file) would claim offsets as covered whose ids they lack.
		_ = datadir.ScanSegments(dir, lastOff, func(_ datadir.SegInfo, msgs []segment.Message) bool {
			for _, m := range msgs {
				if m.Offset == lastOff {
					foreign = m.TransactionID == "" || index.HashTxn(m.TransactionID) != lastHash
					return false
				}
			}
			return true
		})
	}
	switch {
	case foreign:
		s.Dedup = &dedupVerdict{Kind: KindDedupDamaged, Detail: fmt.Sprintf(
			"entry for offset %d names another transaction id than the record there: the file does not describe this log (copied or restored from elsewhere)", lastOff)}
	case errors.Is(herr, index.ErrDedupVersion):
		s.Dedup = &dedupVerdict{Kind: KindDedupStale, Detail: fmt.Sprintf("written by an older comb (%v): rebuilt from the segments on first use", herr)}
	case herr != nil && allZero(b[:min(len(b), index.DedupHeaderSize)]):
		// Made, but its header never reached the disk (the file is never
		// synced): what a power loss leaves, not damage.
		s.Dedup = &dedupVerdict{Kind: KindDedupStale, Detail: fmt.Sprintf("has no header (%d bytes, zeros only: written but never synced before a crash)", len(b))}
	case herr != nil:
		s.Dedup = &dedupVerdict{Kind: KindDedupDamaged, Detail: fmt.Sprintf("header damaged (%v)", herr)}
	case scan.Tail == record.TailCorrupt:
		s.Dedup = &dedupVerdict{Kind: KindDedupDamaged, StartByte: scan.End, EndByte: scan.Resync, Detail: fmt.Sprintf(
			"the entry at byte %d fails its check (%s) and verified entries follow at byte %d: damage to the file (media or a stray write), not a torn append; %d entries before it verify",
			scan.End, scan.Reason, scan.Resync, scan.Entries)}
	case scan.Tail == record.TailDamaged || scan.Tail == record.TailTorn:
		s.Dedup = &dedupVerdict{Kind: KindDedupStale, StartByte: scan.End, EndByte: int64(len(b)), Detail: fmt.Sprintf(
			"ends in %d bytes that are not verified entries (%s): a torn write (the file is never synced) or damage", int64(len(b))-scan.End, scan.Reason)}
	case scan.Tail == record.TailZeros:
		s.Dedup = &dedupVerdict{Kind: KindDedupStale, StartByte: scan.End, EndByte: int64(len(b)), Detail: "ends in zero bytes (a crash)"}
	case past:
		s.Dedup = &dedupVerdict{Kind: KindDedupStale, Detail: fmt.Sprintf("has entries at or past offset %d, beyond the high-water mark (records a crash took back)", s.NextOffset)}
	}
}

// dedupVerdict is what checkDedup says about a dedup.idx that is not whole.
type dedupVerdict struct {
	Kind               Kind // KindDedupDamaged or KindDedupStale
	StartByte, EndByte int64
	Detail             string
}

// reopenLog runs the segment log's own recovery (keep the non-zero bytes of a torn
// tail under quarantineDir, truncate it, rebuild missing or stale indexes, fsync),
// loads the dedup index once so that its own recovery cuts it at the first entry
// that fails and re-indexes the rest, and closes the log. A log that holds no record
// never loads its dedup index: a dedup.idx there is removed (a cache of nothing).
//
// A log written behind the commit log (keep > 0) is opened as its server
// opens it, with segment.OpenFrom(keep): the unsynced bytes from keep on are
// cut (the commit log holds what was acknowledged of them, and the server
// replays it at start), never judged as a torn tail.
func reopenLog(dir, quarantineDir string, keep uint64) (*segment.RecoveryReport, error) {
	opts := segment.Options{QuarantineDir: quarantineDir}
	var l *segment.Log
	var rep *segment.RecoveryReport
	var err error
	if keep > 0 {
		l, rep, err = segment.OpenFrom(dir, opts, keep)
	} else {
		l, rep, err = segment.Open(dir, opts)
	}
	if err != nil {
		return rep, err
	}
	if _, _, _, err := l.FindTransaction("\x00comb-fsck-probe"); err != nil {
		_ = l.Close()
		return rep, err
	}
	empty := l.FirstOffset() == l.NextOffset()
	if err := l.Close(); err != nil {
		return rep, err
	}
	if empty {
		if err := os.Remove(filepath.Join(dir, dedupFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return rep, err
		}
	}
	return rep, nil
}

// indexFilesFor returns the index file that describes segment file name in dir.
func indexFilesFor(dir, name string) []string {
	stem, ok := strings.CutSuffix(name, datadir.SegExt)
	if !ok {
		return nil
	}
	return []string{filepath.Join(dir, stem+datadir.IndexExt)}
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
