package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cespare/xxhash/v2"
)

const (
	metaFrameHeader = 12      // u32 body length + u64 xxhash64(body)
	metaMaxBody     = 1 << 20 // a body this large is a damaged length, not a record
)

// metaJournal is the append-only metadata journal <data>/meta/journal.
// Writers serialise on the broker's registry lock; the journal itself holds
// no lock.
type metaJournal struct {
	f      *os.File
	path   string
	size   int64
	noSync bool
	buf    []byte
}

// metaReplay is what openMetaJournal found: the records in order and how many
// bytes of torn or damaged tail it cut.
type metaReplay struct {
	Records        []metaRecord
	TruncatedBytes int64
	TruncatedAt    int64
}

// openMetaJournal opens (creating if missing) the journal in dir, decodes every
// record and truncates the file at the first record that is incomplete or fails
// its checksum: a crash can only tear the tail, because a change is fsynced
// before it is acknowledged and nothing is written after an unacknowledged one.
func openMetaJournal(dir string, noSync bool) (*metaJournal, metaReplay, error) {
	var rep metaReplay
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, rep, fmt.Errorf("metadata journal: %w", err)
	}
	path := filepath.Join(dir, "journal")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, rep, fmt.Errorf("metadata journal: %w", err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, rep, fmt.Errorf("metadata journal %s: %w", path, err)
	}
	recs, good := decodeMetaFrames(data)
	rep.Records = recs
	if good < int64(len(data)) {
		rep.TruncatedBytes = int64(len(data)) - good
		rep.TruncatedAt = good
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, rep, fmt.Errorf("metadata journal %s: truncate torn tail at byte %d: %w", path, good, err)
		}
		if !noSync {
			if err := f.Sync(); err != nil {
				f.Close()
				return nil, rep, fmt.Errorf("metadata journal %s: %w", path, err)
			}
		}
	}
	if !noSync {
		if err := syncDir(dir); err != nil {
			f.Close()
			return nil, rep, err
		}
	}
	return &metaJournal{f: f, path: path, size: good, noSync: noSync}, rep, nil
}

// decodeMetaFrames decodes framed records from data and returns them with the
// length of the valid prefix.
func decodeMetaFrames(data []byte) ([]metaRecord, int64) {
	var recs []metaRecord
	pos := 0
	for len(data)-pos >= metaFrameHeader {
		n := binary.LittleEndian.Uint32(data[pos:])
		sum := binary.LittleEndian.Uint64(data[pos+4:])
		if n == 0 || n > metaMaxBody || uint64(len(data)-pos-metaFrameHeader) < uint64(n) {
			break
		}
		body := data[pos+metaFrameHeader : pos+metaFrameHeader+int(n)]
		if xxhash.Sum64(body) != sum {
			break
		}
		r, err := decodeMetaRecord(body)
		if err != nil {
			break
		}
		recs = append(recs, r)
		pos += metaFrameHeader + int(n)
	}
	return recs, int64(pos)
}

// append writes recs as one write and fsyncs it (unless the broker runs with
// Sync "never"). Durability: when append returns nil the records survive a
// crash; on error the file is truncated back so no half record stays behind.
func (j *metaJournal) append(recs ...metaRecord) error {
	b := j.buf[:0]
	for i := range recs {
		start := len(b)
		b = append(b, make([]byte, metaFrameHeader)...)
		b = recs[i].encode(b)
		body := b[start+metaFrameHeader:]
		binary.LittleEndian.PutUint32(b[start:], uint32(len(body)))
		binary.LittleEndian.PutUint64(b[start+4:], xxhash.Sum64(body))
	}
	j.buf = b
	if _, err := j.f.WriteAt(b, j.size); err != nil {
		_ = j.f.Truncate(j.size)
		return fmt.Errorf("metadata journal %s: %w", j.path, err)
	}
	if !j.noSync {
		if err := j.f.Sync(); err != nil {
			_ = j.f.Truncate(j.size)
			return fmt.Errorf("metadata journal %s: sync: %w", j.path, err)
		}
	}
	j.size += int64(len(b))
	return nil
}

func (j *metaJournal) close() error {
	if j == nil || j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	return err
}

// syncDir fsyncs a directory so that entries created in it survive a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}
