package meta

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// Metadata is the journal as Read decoded it: the registry a broker opening
// the directory would rebuild, plus what its recovery would do to the file.
type Metadata struct {
	*State
	Records []Record // the valid prefix's records
	File    string   // the journal's path
	Bytes   int64    // file size
	// ValidBytes is the length of the valid prefix; Tail says what follows
	// it (record.TailTorn / TailDamaged: what OpenJournal would quarantine
	// and cut; TailCorrupt: damage it refuses, Err says where).
	ValidBytes int64
	Tail       record.Tail
	Err        error // wraps ErrCorrupt for damage that is not a tail; nil otherwise
	// Salvaged are the records after damage that still verify (TailCorrupt
	// only): what a rebuild can keep.
	Salvaged []Record
	Legacy   bool // a version 1 journal (read as is; the broker upgrades it)
}

// Read decodes <dataDir>/meta/journal without writing anything (no lock, no
// truncation, no upgrade), for offline tools (comb fsck, dump, replay). Safe
// while a broker runs on the directory: it sees a prefix of what is durable.
//
// Errors: the file system's, wrapped (fs.ErrNotExist for a missing journal);
// damage is reported in the result, not as an error.
func Read(fsys vfs.FS, dataDir string) (*Metadata, error) {
	if fsys == nil {
		fsys = vfs.OS
	}
	path := filepath.Join(dataDir, layout.Meta, JournalFile)
	data, err := fsys.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("metadata journal: %w", err)
	}
	m := &Metadata{File: path, Bytes: int64(len(data))}
	if isLegacy(data) {
		m.Legacy = true
		data, m.ValidBytes, m.Err = legacyRecordsAsFrames(path, data)
		if m.Err != nil {
			m.Tail = record.TailCorrupt
		}
	}
	sc, recs, err := scanJournal(path, data)
	m.Records = recs
	if !m.Legacy {
		m.ValidBytes, m.Tail = sc.End, sc.Tail
		if err != nil {
			m.Err = err
			m.Tail = record.TailCorrupt
			m.Salvaged = salvage(data, sc)
		}
	}
	m.State = Apply(recs)
	return m, nil
}

// legacyRecordsAsFrames converts a version 1 journal's valid prefix to the
// current framing (read-only), returning the prefix length in the old file.
func legacyRecordsAsFrames(path string, data []byte) ([]byte, int64, error) {
	var out []byte
	pos := 0
	for pos < len(data) {
		body, n, ok := legacyFrameAt(data[pos:])
		if !ok {
			break
		}
		r, err := decodeRecord(body)
		if err != nil {
			return out, int64(pos), fmt.Errorf("metadata journal %s (version 1): record at byte %d: %v: %w", path, pos, err, ErrCorrupt)
		}
		if out, err = r.appendFrame(out); err != nil {
			return out, int64(pos), fmt.Errorf("metadata journal %s (version 1): record at byte %d: %w", path, pos, err)
		}
		pos += n
	}
	for p := pos + 1; p < len(data); p++ {
		if _, _, ok := legacyFrameAt(data[p:]); ok {
			return out, int64(pos), fmt.Errorf("metadata journal %s (version 1): bytes [%d,%d) are damaged and valid records follow them: %w", path, pos, p, ErrCorrupt)
		}
	}
	return out, int64(pos), nil
}

// salvage returns the decodable records of every verified frame after the
// damage at sc.End, resyncing past each further damage.
func salvage(data []byte, sc record.Scan) []Record {
	var out []Record
	for from := sc.Resync; from >= 0 && from < int64(len(data)); {
		next, _ := JournalFormat.Scan(data[from:], func(_ int64, body []byte) error {
			if r, err := decodeRecord(body); err == nil {
				out = append(out, r)
			}
			return nil
		})
		if next.Tail != record.TailCorrupt {
			break
		}
		from += next.Resync
	}
	return out
}

// IsMissing reports whether err says the journal does not exist.
func IsMissing(err error) bool { return errors.Is(err, fs.ErrNotExist) }
