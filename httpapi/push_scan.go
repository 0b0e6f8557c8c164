package httpapi

import (
	"bytes"
	"encoding/binary"
	"strings"
	"unsafe"

	"github.com/combmq/comb/broker"
)

// The push body's fast path (issue 14: decoding into pushItemJSON with goccy/go-json was 22 %
// of a push's server CPU, most of it five allocations an item). scanPush reads the shape every
// client sends, in one pass and a handful of allocations a request, and gives up (ok false) on
// anything else; decodePush then decodes the body with goccy as before. So the fast path never
// decides an answer of its own: on every body it accepts, its items are the ones goccy gives
// (FuzzScanPushMatchesGoccy checks that on every input it accepts), and every error message,
// coming from the same checks or from goccy, is byte-identical.
//
// Accepted: an object whose keys are plain strings (printable ASCII, no escape); "items", once,
// an array of objects; in each item the keys queue (a string, required), partition,
// transactionId and traceId (strings), payload (any JSON value but null), each at most once,
// their string values plain; other keys with any value, skipped. Every value is checked
// against RFC 8259's grammar, strictly (a payload string may hold any byte but a control
// character, as goccy copies it verbatim and checkPayload then checks its UTF-8). Given up
// on: any other shape, a key that equals a known one only ignoring case (goccy matches keys
// that way), nesting deeper than scanMaxDepth, and every syntax error.

// scanMaxDepth bounds a skipped value's nesting; deeper bodies go to goccy.
const scanMaxDepth = 64

// pushScanner reads one body; i is the next byte.
type pushScanner struct {
	b []byte
	i int
}

// scanPush returns the items of body when it has the accepted shape (see above), else ok
// false. The items' strings and payloads point into one copy of the body (fasthttp reuses the
// request buffer), except queue and partition, which get their own copy each (one per
// distinct name of the request): the broker keeps those as map keys, and they must not pin
// the whole body.
func scanPush(body []byte) (items []broker.PushItem, ok bool) {
	own := bytes.Clone(body) // not zeroed first, as make would
	s := pushScanner{b: own}
	s.ws()
	if !s.take('{') {
		return nil, false
	}
	seenItems := false
	s.ws()
	if !s.take('}') {
		for {
			s.ws()
			key, ok := s.key()
			if !ok {
				return nil, false
			}
			s.ws()
			switch {
			case key == "items":
				if seenItems || !s.take('[') {
					return nil, false
				}
				seenItems = true
				if items, ok = s.items(); !ok {
					return nil, false
				}
			case strings.EqualFold(key, "items"):
				return nil, false
			case !s.value(0):
				return nil, false
			}
			s.ws()
			if s.take('}') {
				break
			}
			if !s.take(',') {
				return nil, false
			}
		}
	}
	s.ws()
	if s.i != len(s.b) || !seenItems {
		return nil, false
	}
	return items, true
}

// items reads the items array after its '[' up to and with its ']'.
func (s *pushScanner) items() ([]broker.PushItem, bool) {
	// Sized by a count that can only be too large (a payload may hold the word too); without
	// the leading quote, as '"' is too frequent in JSON for bytes.Index's first-byte search.
	items := make([]broker.PushItem, 0, bytes.Count(s.b[s.i:], []byte(`queue"`)))
	var names nameCache
	s.ws()
	if s.take(']') {
		return items, true
	}
	for {
		s.ws()
		items = append(items, broker.PushItem{})
		if !s.item(&items[len(items)-1], &names) {
			return nil, false
		}
		s.ws()
		if s.take(']') {
			return items, true
		}
		if !s.take(',') {
			return nil, false
		}
	}
}

// item reads one item object into it.
func (s *pushScanner) item(it *broker.PushItem, names *nameCache) bool {
	if !s.take('{') {
		return false
	}
	var have uint8
	const hQueue, hPartition, hTx, hTrace, hPayload = 1, 2, 4, 8, 16
	s.ws()
	if s.take('}') {
		return false // no queue
	}
	for {
		s.ws()
		key, ok := s.key()
		if !ok {
			return false // a key with an escape or past ASCII: goccy's
		}
		s.ws()
		var bit uint8
		switch key {
		case "queue":
			bit = hQueue
		case "partition":
			bit = hPartition
		case "transactionId":
			bit = hTx
		case "traceId":
			bit = hTrace
		case "payload":
			bit = hPayload
		default:
			for _, k := range [...]string{"queue", "partition", "transactionId", "traceId", "payload"} {
				if strings.EqualFold(key, k) {
					return false
				}
			}
		}
		switch {
		case bit == 0:
			if !s.value(0) {
				return false
			}
		case have&bit != 0:
			return false
		case bit == hPayload:
			start := s.i
			if s.peek('n') || !s.value(0) {
				return false // null: goccy's RawMessage rules, not ours
			}
			it.Payload = s.b[start:s.i:s.i]
		default:
			v, ok := s.plainString()
			if !ok {
				return false
			}
			switch bit {
			case hQueue:
				it.Queue = names.get(v)
			case hPartition:
				it.Partition = names.get(v)
			case hTx:
				it.TransactionID = bytesString(v)
			case hTrace:
				it.TraceID = bytesString(v)
			}
		}
		have |= bit
		s.ws()
		if s.take('}') {
			return have&hQueue != 0
		}
		if !s.take(',') {
			return false
		}
	}
}

// nameCache hands out the queue and partition names of one request, one string each: a
// request names few (one partition, or a handful), so a short list searched in order serves.
type nameCache struct {
	names [8]string
	n     int
}

func (c *nameCache) get(v []byte) string {
	for _, name := range c.names[:c.n] {
		if name == b2s(v) {
			return name
		}
	}
	name := string(v)
	if c.n < len(c.names) {
		c.names[c.n] = name
		c.n++
	}
	return name
}

// bytesString views b, a part of the body's private copy (never written again), as a string.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

func (s *pushScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *pushScanner) peek(c byte) bool { return s.i < len(s.b) && s.b[s.i] == c }

func (s *pushScanner) take(c byte) bool {
	if s.peek(c) {
		s.i++
		return true
	}
	return false
}

// key reads a plain string and the colon after it.
func (s *pushScanner) key() (string, bool) {
	k, ok := s.plainString()
	if !ok {
		return "", false
	}
	s.ws()
	return b2s(k), s.take(':')
}

// plainString reads a string of printable ASCII without escapes and returns its content.
func (s *pushScanner) plainString() ([]byte, bool) {
	if !s.take('"') {
		return nil, false
	}
	start := s.i
	s.i = skipPlainASCII(s.b, s.i)
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			s.i++
			return s.b[start : s.i-1], true
		}
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// value skips one JSON value, checking it strictly; false on anything else.
func (s *pushScanner) value(depth int) bool {
	if s.i >= len(s.b) || depth > scanMaxDepth {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.anyString()
	case c == '{':
		s.i++
		s.ws()
		if s.take('}') {
			return true
		}
		for {
			s.ws()
			if !s.anyString() {
				return false
			}
			s.ws()
			if !s.take(':') {
				return false
			}
			s.ws()
			if !s.value(depth + 1) {
				return false
			}
			s.ws()
			if s.take('}') {
				return true
			}
			if !s.take(',') {
				return false
			}
		}
	case c == '[':
		s.i++
		s.ws()
		if s.take(']') {
			return true
		}
		for {
			s.ws()
			if !s.value(depth + 1) {
				return false
			}
			s.ws()
			if s.take(']') {
				return true
			}
			if !s.take(',') {
				return false
			}
		}
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *pushScanner) literal(w string) bool {
	if !strings.HasPrefix(b2s(s.b[s.i:]), w) {
		return false
	}
	s.i += len(w)
	return true
}

// anyString skips a string: no control character, escapes as RFC 8259 7 lists them; other
// bytes as they are.
func (s *pushScanner) anyString() bool {
	if !s.take('"') {
		return false
	}
	for s.i < len(s.b) {
		s.i = skipPlain(s.b, s.i)
		if s.i >= len(s.b) {
			return false
		}
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return false
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !isHex(h) {
						return false
					}
				}
				s.i += 6
			default:
				return false
			}
		default:
			s.i++
		}
	}
	return false
}

// skipPlain returns the index of the first byte at or after i that is a quote, a backslash or a
// control character (len(b) if none), eight bytes a step (the SWAR tests of "Bit Twiddling
// Hacks": a word has a zero byte when (v-0x01..)&^v&0x80.. is not zero; below n likewise with
// n*0x01..): payloads are most of a push body.
func skipPlain(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		v := binary.LittleEndian.Uint64(b[i:])
		q, bs := v^(ones*'"'), v^(ones*'\\')
		if ((v-ones*0x20)&^v|(q-ones)&^q|(bs-ones)&^bs)&highs != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

// skipPlainASCII is skipPlain that also stops at DEL and every byte past ASCII (names and keys
// on the fast path are printable ASCII).
func skipPlainASCII(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		v := binary.LittleEndian.Uint64(b[i:])
		q, bs, del := v^(ones*'"'), v^(ones*'\\'), v^(ones*0x7f)
		if (v|(v-ones*0x20)&^v|(q-ones)&^q|(bs-ones)&^bs|(del-ones)&^del)&highs != 0 {
			break
		}
	}
	return i
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number skips -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *pushScanner) number() bool {
	s.take('-')
	switch {
	case s.take('0'):
	case s.digits() == 0:
		return false
	}
	if s.take('.') && s.digits() == 0 {
		return false
	}
	if s.take('e') || s.take('E') {
		if !s.take('+') {
			s.take('-')
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

func (s *pushScanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}
