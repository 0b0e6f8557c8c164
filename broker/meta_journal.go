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

// ErrCorrupt is wrapped by Open (and reported by ReadMetadata) when the
// metadata journal is damaged somewhere other than a torn tail: a frame fails
// its checksum with a valid frame after it, or a frame passes its checksum but
// does not decode. Truncating there would silently forget every queue and
// partition registered later, so the broker refuses to start; `comb fsck`
// reports the byte range.
var ErrCorrupt = errors.New("broker: metadata journal damaged")

// openMetaJournal opens (creating if missing) the journal in dir and decodes
// every record. A torn tail (an incomplete frame or one failing its checksum,
// with no valid frame anywhere after it) is truncated: a crash can only tear
// the tail, because a change is fsynced before it is acknowledged and nothing
// is written after an unacknowledged one. Any other damage returns an error
// wrapping ErrCorrupt that names the file and the damaged byte range, and the
// file is left as it is.
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
	sc := scanMetaFrames(data)
	recs, good := sc.records, sc.valid
	if err := sc.damage(path); err != nil {
		f.Close()
		return nil, rep, err
	}
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

// metaScan is what scanMetaFrames found in a journal's bytes.
type metaScan struct {
	records []metaRecord // decoded from the valid prefix
	valid   int64        // length of the valid prefix
	// resync is where the first valid frame after the damage starts, or -1
	// when none follows (a torn tail); badBody says the frame at valid passed
	// its checksum but did not decode (never a torn write).
	resync  int64
	badBody bool
}

// damage returns nil for a clean journal or a torn tail, else an error
// wrapping ErrCorrupt with the file and the damaged byte range.
func (s metaScan) damage(path string) error {
	switch {
	case s.badBody:
		return fmt.Errorf("metadata journal %s: the record at byte %d passes its checksum but does not decode (a newer format or a bug, not a torn write): %w", path, s.valid, ErrCorrupt)
	case s.resync >= 0:
		return fmt.Errorf("metadata journal %s: bytes [%d,%d) are damaged and valid records follow them (not a torn tail; truncating would forget later queues and partitions; run comb fsck): %w", path, s.valid, s.resync, ErrCorrupt)
	}
	return nil
}

// scanMetaFrames decodes framed records from data up to the first frame that
// is short, fails its checksum or does not decode, then looks for a valid
// frame anywhere after that point (the resync that tells a torn tail from
// damage to acknowledged records; it runs only when the prefix ends early).
func scanMetaFrames(data []byte) metaScan {
	s := metaScan{resync: -1}
	pos := 0
	for pos < len(data) {
		body, n, ok := metaFrameAt(data[pos:])
		if !ok {
			break
		}
		r, err := decodeMetaRecord(body)
		if err != nil {
			s.badBody = true
			break
		}
		s.records = append(s.records, r)
		pos += n
	}
	s.valid = int64(pos)
	if s.badBody {
		return s
	}
	for p := pos + 1; p < len(data); p++ {
		if body, _, ok := metaFrameAt(data[p:]); ok {
			if _, err := decodeMetaRecord(body); err == nil {
				s.resync = int64(p)
				break
			}
		}
	}
	return s
}

// metaFrameAt returns the body of the frame at the start of b and the frame's
// length, or ok=false when b does not start with a whole frame whose checksum
// verifies.
func metaFrameAt(b []byte) (body []byte, n int, ok bool) {
	if len(b) < metaFrameHeader {
		return nil, 0, false
	}
	size := binary.LittleEndian.Uint32(b)
	if size == 0 || size > metaMaxBody || uint64(len(b)-metaFrameHeader) < uint64(size) {
		return nil, 0, false
	}
	body = b[metaFrameHeader : metaFrameHeader+int(size)]
	if xxhash.Sum64(body) != binary.LittleEndian.Uint64(b[4:]) {
		return nil, 0, false
	}
	return body, metaFrameHeader + int(size), true
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
