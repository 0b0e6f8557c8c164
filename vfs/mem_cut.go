package vfs

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"sort"
)

// CutPage is the unit in which PowerCut keeps or loses unsynced bytes: the
// page cache writes a file back page by page, in no promised order.
const CutPage = 4096

// PowerCut returns a new twin holding one of the states a power loss now may
// leave on Linux, chosen by seed (the same seed and the same history give the
// same state). It is stricter than Crash, which always returns the least that
// survives, because a real machine keeps some of what was never synced:
//
//   - A file's bytes: what its last Sync made durable, plus any subset of the
//     pages written since, each either whole or cut short inside the page (a
//     page written back before the rest of it was written), the rest zeros
//     where the durable file had nothing. Its size is the durable size, the
//     current size or a page boundary between them, so an unsynced append may
//     come back with zeros in it, and an unsynced truncate may be undone.
//   - Names (strict twins): each directory's entries as of its last SyncDir,
//     plus a prefix, in the order they were made, of the changes since (a
//     journaling file system commits its journal on its own too): a create,
//     rename or removal not made durable may survive or not, a rename never
//     half (both of its changes are in the one directory or in order). A
//     directory whose own entry is lost takes everything under it.
//   - Mapped files (never synced: index caches): each page as of the file's
//     last Map or zeros, or the file as its last Sync left it (usually empty).
//
// A cut is one instant even while other goroutines use the twin: writes,
// syncs, truncates and name changes land wholly before or after it. It reads
// no mapped file's live bytes, so it is race-free beside their writers.
func (m *Mem) PowerCut(seed uint64) *Mem {
	r := rand.New(rand.NewPCG(seed, 0xc07))
	m.cutMu.Lock()
	defer m.cutMu.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := NewMem()
	out.strict, out.syncFSNoop, out.fsType = m.strict, m.syncFSNoop, m.fsType

	files, dirs := m.cutNamesLocked(r)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names) // the seed picks the same pages every time
	for _, name := range names {
		n := files[name]
		if !dirs[filepath.Dir(name)] {
			continue
		}
		n.mu.Lock()
		var data []byte
		if n.mapped {
			data = cutMapped(r, n.durable, n.back)
		} else {
			data = cutData(r, n.durable, n.data)
		}
		n.mu.Unlock()
		c := &memNode{data: data, durable: append([]byte(nil), data...), mapped: n.mapped}
		out.files[name] = c
		out.durableFiles[name] = c
		out.used += int64(len(data))
	}
	for d := range dirs {
		out.dirs[d] = true
		out.durableDirs[d] = true
	}
	return out
}

// cutNamesLocked returns the names that survive a cut: the files and the
// directories reachable from the root (see PowerCut).
func (m *Mem) cutNamesLocked(r *rand.Rand) (map[string]*memNode, map[string]bool) {
	if !m.strict {
		files := make(map[string]*memNode, len(m.files))
		for name, n := range m.files {
			files[name] = n
		}
		dirs := make(map[string]bool, len(m.dirs))
		for d := range m.dirs {
			dirs[d] = true
		}
		return files, dirs
	}
	// The journal committed every change up to seq k by itself.
	var k uint64
	switch r.IntN(3) {
	case 0: // nothing unsynced survives (Crash)
	case 1:
		k = m.seq
	default:
		k = r.Uint64N(m.seq + 1)
	}
	files := make(map[string]*memNode, len(m.durableFiles))
	for name, n := range m.durableFiles {
		files[name] = n
	}
	dirs := make(map[string]bool, len(m.durableDirs))
	for d := range m.durableDirs {
		dirs[d] = true
	}
	for _, ops := range m.pend {
		for _, op := range ops {
			if op.seq > k {
				break
			}
			switch {
			case op.dir && op.gone:
				delete(dirs, op.name)
			case op.dir:
				dirs[op.name] = true
			case op.gone:
				delete(files, op.name)
			default:
				files[op.name] = op.node
			}
		}
	}
	// A directory survives only if every directory above it does.
	reach := make(map[string]bool, len(dirs))
	var reachable func(d string) bool
	reachable = func(d string) bool {
		if ok, seen := reach[d]; seen {
			return ok
		}
		ok := dirs[d] && (d == filepath.Dir(d) || reachable(filepath.Dir(d)))
		reach[d] = ok
		return ok
	}
	for d := range dirs {
		if !reachable(d) {
			delete(dirs, d)
		}
	}
	return files, dirs
}

// cutData returns what survives of a file whose durable bytes are d and
// current bytes c (see PowerCut).
func cutData(r *rand.Rand, d, c []byte) []byte {
	if bytes.Equal(d, c) {
		return append([]byte(nil), d...)
	}
	switch r.IntN(4) {
	case 0: // nothing written back
		return append([]byte(nil), d...)
	case 1: // everything written back
		return append([]byte(nil), c...)
	}
	lo, hi := min(len(d), len(c)), max(len(d), len(c))
	var size int
	switch r.IntN(3) {
	case 0:
		size = len(d)
	case 1:
		size = len(c)
	default:
		size = max(lo, (lo+r.IntN(hi-lo+1))/CutPage*CutPage)
	}
	out := make([]byte, size)
	at := func(b []byte, i int) byte {
		if i < len(b) {
			return b[i]
		}
		return 0
	}
	for p := 0; p < size; p += CutPage {
		end := min(p+CutPage, size)
		// old: the page as the durable file has it (zeros past its end).
		// new: the current page; cut: the current page up to a point.
		newUpTo := p // bytes [p, newUpTo) from c, the rest from d
		switch {
		case p >= len(c): // only the durable file reaches here: an unsynced truncate undone
		case r.IntN(2) == 0: // not written back
		case r.IntN(3) == 0: // written back before the rest of the page was written
			newUpTo = p + r.IntN(end-p+1)
		default:
			newUpTo = end
		}
		newUpTo = min(newUpTo, max(p, len(c))) // past the current end: what the durable file had
		for i := p; i < end; i++ {
			if i < newUpTo {
				out[i] = at(c, i)
			} else {
				out[i] = at(d, i)
			}
		}
	}
	return out
}

// cutMapped returns what survives of a mapped file: its durable bytes, its
// bytes as of the last Map, or those pages mixed with zeros.
func cutMapped(r *rand.Rand, durable, back []byte) []byte {
	switch r.IntN(3) {
	case 0:
		return append([]byte(nil), durable...)
	case 1:
		return append([]byte(nil), back...)
	}
	out := append([]byte(nil), back...)
	for p := 0; p < len(out); p += CutPage {
		if r.IntN(2) == 0 {
			clear(out[p:min(p+CutPage, len(out))])
		}
	}
	return out
}
