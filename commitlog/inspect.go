package commitlog

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// Inspection is what Inspect found in a log directory, read-only.
type Inspection struct {
	Files int // .wal files
	Start LSN // the recorded truncation point (0 = none)
	First LSN // first entry Inspect passed to fn (0 = none)
	Last  LSN // last one
	// Tail is what follows the newest file's last batch; TailCorrupt (or
	// Err) means damage Open would refuse under sync always. TailDamaged
	// (and TailTorn under sync never) is what Open zeroes (never
	// acknowledged). A newest file shorter than its preallocation is Err
	// wrapping ErrShortFile, located by TailFile, TailStart and TailEnd (the
	// file's size).
	Tail record.Tail
	// TailFile, TailStart, TailEnd locate those bytes (TailEnd is where the
	// verified batch after damage starts, for TailCorrupt).
	TailFile           string
	TailStart, TailEnd int64
	Err                error // damage that is not a tail (ErrCorrupt), nil otherwise
}

// Inspect reads the log in dir without writing anything (no tail zeroed, no
// spare removed), for offline tools (comb fsck, dump): fn gets every entry
// from the truncation point on that Open would keep, in LSN order. Safe
// while a server appends to the directory: it sees a prefix, possibly ending
// in a batch being written (a torn tail). A missing directory is an empty
// log.
//
// Errors: fn's, the file system's (wrapped). Damage is reported in the
// Inspection, not as an error.
func Inspect(fsys vfs.FS, dir string, fn func(Entry) error) (*Inspection, error) {
	if fsys == nil {
		fsys = vfs.OS
	}
	in := &Inspection{}
	names, err := fsys.List(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return in, nil
	}
	if err != nil {
		return nil, fmt.Errorf("commitlog: %w", err)
	}
	if in.Start, err = readStart(fsys, dir); err != nil {
		in.Err = err
		return in, nil
	}
	type named struct {
		name  string
		first LSN
	}
	var found []named
	for _, n := range names {
		if first, ok := parseFileName(n); ok {
			found = append(found, named{n, first})
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].first < found[j].first })
	in.Files = len(found)
	expect := LSN(0)
	for i, n := range found {
		newest := i == len(found)-1
		if expect != 0 && n.first != expect {
			in.Err = fmt.Errorf("%w: %s starts at LSN %d, the file before it ends at %d", ErrCorrupt, n.name, n.first, expect-1)
			return in, nil
		}
		data, err := fsys.ReadFile(filepath.Join(dir, n.name))
		if err != nil {
			return nil, fmt.Errorf("commitlog: %w", err)
		}
		h, hlen, err := decodeHeader(data)
		if err != nil {
			in.Err = fmt.Errorf("%w: %s: header: %v", ErrCorrupt, n.name, err)
			return in, nil
		}
		format := batchFormat.WithSeed(h.salt)
		next := n.first
		sc, err := format.Scan(data[hlen:], func(pos int64, body []byte) error {
			bfirst, _, err := eachEntry(body, nil)
			if err != nil || bfirst != next {
				return fmt.Errorf("batch at byte %d: LSN %d, expected %d (%v)", int64(hlen)+pos, bfirst, next, err)
			}
			_, count, err := eachEntry(body, func(e Entry) error {
				if e.LSN < in.Start || fn == nil {
					return nil
				}
				if in.First == 0 {
					in.First = e.LSN
				}
				in.Last = e.LSN
				if err := fn(e); err != nil {
					return fnError{err}
				}
				return nil
			})
			next += LSN(count)
			return err
		})
		if err != nil {
			var fe fnError
			if errors.As(err, &fe) {
				return in, fe.err
			}
			in.Err = fmt.Errorf("%w: %s: %v", ErrCorrupt, n.name, err)
			return in, nil
		}
		expect = next
		// The server's rule (judgeTail) under its default policies, which
		// sync the preallocation; strict=false: a damaged batch with a
		// verified one after it is reported as Tail, not Err.
		_, jerr := judgeTail(n.name, newest, sc, int64(hlen), int64(len(data)), true, false)
		if sc.Tail != record.TailZeros && (sc.Tail != record.TailClean || jerr != nil) {
			in.Tail, in.TailFile, in.TailStart = sc.Tail, n.name, int64(hlen)+sc.End
			in.TailEnd = int64(hlen) + sc.DataEnd
			if sc.Tail == record.TailCorrupt {
				in.TailEnd = int64(hlen) + sc.Resync
			}
			if errors.Is(jerr, ErrShortFile) {
				in.TailEnd = int64(len(data))
			}
		}
		if jerr != nil {
			in.Err = jerr
			return in, nil
		}
	}
	return in, nil
}

// fnError marks an error returned by Inspect's callback, so it is passed
// through rather than reported as damage.
type fnError struct{ err error }

func (e fnError) Error() string { return e.err.Error() }
func (e fnError) Unwrap() error { return e.err }
