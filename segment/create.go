package segment

import (
	"errors"
	"fmt"
	"io/fs"
)

// Create makes a new, empty log in dir, which must not exist yet; its parent
// must. It costs a mkdir and a stat (no directory listing, no file: the
// first Append creates the segment file and its index), where Open of a
// missing directory also reads it back. When dir exists (or the parent does
// not) it falls back to Open.
//
// Durability: the new directory's entry in its parent is NOT synced; the
// caller syncs the parent once for every log it creates (the broker does it
// per push request, before journaling the partitions).
func Create(dir string, opts Options) (*Log, error) {
	if err := opts.fsOf().Mkdir(dir); err != nil {
		if errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrNotExist) {
			l, _, err := Open(dir, opts)
			return l, err
		}
		return nil, fmt.Errorf("segment log %s: %w", dir, err)
	}
	l := newLog(opts.fsOf(), dir, opts)
	dev, err := l.fs.Device(dir)
	if err != nil {
		return nil, fmt.Errorf("segment log %s: %w", dir, err)
	}
	l.dev = dev
	l.dedup.SetOpenNext(1)
	l.next = 1
	return l, nil
}
