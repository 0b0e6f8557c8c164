package index

import (
	"fmt"

	"github.com/combmq/comb/vfs"
)

// Backing is the storage under a mapped index file: a vfs.Mapping (vfs.OS's
// for real files, vfs.Mem's in tests).
type Backing = vfs.Mapping

// File is a mapped segment index: a header and n valid entries. It is not safe
// for concurrent use; package segment guards it with the partition's lock.
//
// Durability: none is promised. Entries are written into a shared mapping and
// reach the disk whenever the kernel writes the pages back; the index is a
// cache that recovery checks against the segment file and rebuilds.
type File struct {
	back Backing
	m    []byte
	n    int
	base uint64
}

// minCapacity is the entry capacity a fresh index file is given; it doubles as it fills.
const minCapacity = 64

// Load maps the index for the segment file starting at base. The file keeps
// its leading run of valid entries (ValidEntries; none when the file is empty
// or its header is bad, in which case a new header is written). repaired is
// true when the file was empty or missing its header, or held anything past
// its valid entries (torn or stale ones), which has been cleared: the caller
// rebuilds the rest from the segments.
func Load(back Backing, base uint64) (f *File, repaired bool, err error) {
	size, err := back.Size()
	if err != nil {
		return nil, false, err
	}
	f = &File{back: back, base: base}
	if size >= HeaderSize {
		if f.m, err = back.Map(size); err != nil {
			return nil, false, err
		}
		if CheckHeader(f.m, base) == nil {
			f.n = ValidEntries(f.m[HeaderSize:], base)
			rest := f.m[HeaderSize+f.n*EntrySize:]
			for _, c := range rest {
				if c != 0 {
					repaired = true
					break
				}
			}
			clear(rest)
			return f, repaired, nil
		}
	}
	if f.m, err = back.Map(HeaderSize + minCapacity*EntrySize); err != nil {
		return nil, false, err
	}
	clear(f.m)
	PutHeader(f.m, base)
	return f, true, nil
}

// Len is the number of entries.
func (f *File) Len() int { return f.n }

// Entries is a view of the entries, valid until the next Append, Truncate or Close.
func (f *File) Entries() Entries { return Entries(f.m[HeaderSize : HeaderSize+f.n*EntrySize]) }

// Last returns the last entry; ok is false when there is none.
func (f *File) Last() (Entry, bool) {
	if f.n == 0 {
		return Entry{}, false
	}
	return f.Entries().At(f.n - 1), true
}

// Append adds e after the last entry, growing the file when full. The caller
// keeps entries consecutive (see ValidEntries).
func (f *File) Append(e Entry) error {
	at := HeaderSize + f.n*EntrySize
	if at+EntrySize > len(f.m) {
		m, err := f.back.Map(int64(HeaderSize + max(2*(len(f.m)-HeaderSize), minCapacity*EntrySize)))
		if err != nil {
			return fmt.Errorf("index %d: grow: %w", f.base, err)
		}
		f.m = m
	}
	PutEntry(f.m[at:], e)
	f.n++
	return nil
}

// Truncate keeps the first n entries and clears the rest.
func (f *File) Truncate(n int) {
	if n < f.n {
		clear(f.m[HeaderSize+n*EntrySize : HeaderSize+f.n*EntrySize])
		f.n = n
	}
}

// MoveTo copies the header and entries into back (resized to the current
// capacity) and continues on it, closing the old backing. package segment
// uses it to write an index that lived in memory to its file (lazy index
// files). On error f is unchanged and still on its old backing; back is
// left open for the caller to close.
func (f *File) MoveTo(back Backing) error {
	m, err := back.Map(int64(len(f.m)))
	if err != nil {
		return fmt.Errorf("index %d: move: %w", f.base, err)
	}
	copy(m, f.m)
	old := f.back
	f.back, f.m = back, m
	_ = old.Close()
	return nil
}

// Close shrinks the file to its entries when shrink is true, then unmaps and closes it.
func (f *File) Close(shrink bool) error {
	var err error
	if shrink && f.m != nil {
		_, err = f.back.Map(int64(HeaderSize + f.n*EntrySize))
	}
	f.m = nil
	if cerr := f.back.Close(); err == nil {
		err = cerr
	}
	return err
}
