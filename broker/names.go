package broker

import (
	"encoding/hex"
	"strings"

	"github.com/combmq/comb/names"
	"github.com/google/uuid"
)

// labelsFromName derives the labels of an auto-created queue (spec 1.3):
// namespace is the text before the first '.', or the whole name without one;
// task is the text between the first and second '.', or "" without a dot.
func labelsFromName(name string) (namespace, task string) {
	i := strings.IndexByte(name, '.')
	if i < 0 {
		return name, ""
	}
	namespace, rest := name[:i], name[i+1:]
	if j := strings.IndexByte(rest, '.'); j >= 0 {
		rest = rest[:j]
	}
	return namespace, rest
}

// nameErr is names.Check as the broker's 400 (spec 0.4, 11 #27), for the paths that do not pass
// through httpapi's check first (comb import, streams, replay).
func nameErr(kind names.Kind, name string) error {
	if err := names.Check(kind, name); err != nil {
		return BadRequest(err.Error())
	}
	return nil
}

// txidErr is names.CheckTransactionID as the broker's 400 (spec 0.4: at most 255
// characters, no NUL; an empty one is the caller's business).
func txidErr(id string) error {
	if err := names.CheckTransactionID(id); err != nil {
		return BadRequest(err.Error())
	}
	return nil
}

// labelErr is names.CheckLabel as the broker's 400: labels go into the metadata journal, so this
// keeps a client from writing megabytes there (issue 10).
func labelErr(kind names.Kind, label string) error {
	if err := names.CheckLabel(kind, label); err != nil {
		return BadRequest(err.Error())
	}
	return nil
}

// uuidString formats a 16-byte id as the canonical 36-character UUID text.
func uuidString(id [16]byte) string { return uuid.UUID(id).String() }

// appendUUID appends id in the canonical form uuidString gives
// (8-4-4-4-12 lowercase hex).
func appendUUID(dst []byte, id [16]byte) []byte {
	var buf [36]byte
	hex.Encode(buf[0:8], id[0:4])
	buf[8] = '-'
	hex.Encode(buf[9:13], id[4:6])
	buf[13] = '-'
	hex.Encode(buf[14:18], id[6:8])
	buf[18] = '-'
	hex.Encode(buf[19:23], id[8:10])
	buf[23] = '-'
	hex.Encode(buf[24:], id[10:])
	return append(dst, buf[:]...)
}

// parseID parses a UUID given by a client; ok=false for anything else.
func parseID(s string) ([16]byte, bool) {
	if len(s) != 36 {
		return [16]byte{}, false
	}
	u, err := uuid.Parse(s)
	if err != nil {
		return [16]byte{}, false
	}
	return u, true
}

// idSeq hands out time-ordered UUIDv7 ids for one request: the first comes
// from uuid.NewV7 (monotonic across the process), the rest increment its 62
// random low bits, so the ids of one push are strictly increasing in item
// order at the cost of one clock read per request.
type idSeq struct {
	next [16]byte
	used bool
}

func (s *idSeq) id() ([16]byte, error) {
	if !s.used {
		u, err := uuid.NewV7()
		if err != nil {
			return [16]byte{}, err
		}
		s.next, s.used = u, true
	}
	id := s.next
	// Increment bytes 8..15 big-endian, leaving the two variant bits of byte 8.
	for i := 15; i >= 8; i-- {
		if i == 8 {
			s.next[8] = (s.next[8] & 0xC0) | ((s.next[8] + 1) & 0x3F)
			break
		}
		s.next[i]++
		if s.next[i] != 0 {
			break
		}
	}
	return id, nil
}

func newV7() [16]byte {
	u, err := uuid.NewV7()
	if err != nil {
		// NewV7 fails only when the system random source fails; a v4 id is
		// still unique, merely not time-ordered.
		return uuid.New()
	}
	return u
}
