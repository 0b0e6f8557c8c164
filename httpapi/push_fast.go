package httpapi

import (
	"encoding/binary"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/combmq/comb/broker"
)

// A push body from a client library is nearly always the same plain shape: {"items":[{...}]},
// each item holding queue, partition, transactionId, traceId as escape-free strings and a
// payload. decodePushFast reads exactly that shape by hand, with a handful of allocations per
// request instead of ~5 per item through the reflection decoder (which was 15 % of push CPU and
// most of its garbage). Anything else (an escape in a name, a mistyped field, a key spelled in
// another case, a duplicate key, null where a string belongs, invalid JSON anywhere) makes it
// give up, and decodePush falls back to the reflection decoder, which owns every error message.
// So the fast path only ever accepts bodies the fallback accepts, with the same items;
// FuzzDecodePushFastMatchesFallback checks that.

// fastMaxDepth bounds payload nesting on the fast path; deeper payloads take the fallback.
const fastMaxDepth = 64

// decodePushFast returns where the items of a plain push body sit and true, or false to fall
// back. toPushItemsFast validates and converts them.
func decodePushFast(body []byte) ([]pushItemFast, bool) {
	d := fastDecoder{b: body}
	d.ws()
	if !d.eat('{') {
		return nil, false
	}
	var items []pushItemFast
	seenItems := false
	d.ws()
	if !d.eat('}') {
		for {
			d.ws()
			key, ok := d.plainString()
			if !ok {
				return nil, false
			}
			d.ws()
			if !d.eat(':') {
				return nil, false
			}
			d.ws()
			switch {
			case string(key) == "items":
				if seenItems {
					return nil, false
				}
				seenItems = true
				if items, ok = d.items(); !ok {
					return nil, false
				}
			case strings.EqualFold(string(key), "items"):
				return nil, false // the fallback matches keys case-insensitively
			default:
				if !d.skipValue(0) {
					return nil, false
				}
			}
			d.ws()
			if d.eat('}') {
				break
			}
			if !d.eat(',') {
				return nil, false
			}
		}
	}
	d.ws()
	if d.i != len(d.b) || !seenItems || items == nil {
		return nil, false // trailing bytes, or no items array: the fallback words the error
	}
	return items, true
}

// toPushItemsFast validates fast-path items exactly as toPushItems does and converts them. One
// copy of the body backs every transactionId, traceId and payload: the strings view it through
// unsafe.String, which is sound because nothing writes to the copy after this function (the
// payload slices are capped so an append cannot write into a neighbour either).
func toPushItemsFast(body []byte, in []pushItemFast) ([]broker.PushItem, string) {
	raw := append([]byte(nil), body...)
	str := unsafe.String(unsafe.SliceData(raw), len(raw))
	out := make([]broker.PushItem, len(in))
	var lastQ, lastP string
	for i := range in {
		it := &in[i]
		q := internSpan(str, it.queueSpan, &lastQ)
		var part string
		if it.partSpan.set {
			part = internSpan(str, it.partSpan, &lastP)
		}
		tx, trace := str[it.txSpan.from:it.txSpan.to], str[it.traceSpan.from:it.traceSpan.to]
		if m := checkPushItem(&q, part, tx, trace); m != "" {
			return nil, m
		}
		out[i] = broker.PushItem{Queue: q, Partition: part, TransactionID: tx, TraceID: trace,
			Payload: raw[it.payloadSpan.from:it.payloadSpan.to:it.payloadSpan.to]}
	}
	return out, ""
}

// internSpan returns the name at sp, reusing *last when it is the same name (all items of a
// request usually share queue and partition) and cloning it otherwise.
func internSpan(str string, sp span, last *string) string {
	s := str[sp.from:sp.to]
	if s != *last {
		*last = strings.Clone(s)
	}
	return *last
}

// span is a byte range of the body; set tells a present field from an absent one.
type span struct {
	from, to int
	set      bool
}

// pushItemFast is where one item's fields sit in the body.
type pushItemFast struct {
	queueSpan, partSpan, txSpan, traceSpan, payloadSpan span
}

type fastDecoder struct {
	b []byte
	i int
}

func (d *fastDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *fastDecoder) eat(c byte) bool {
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// items reads the items array: objects only, else false.
func (d *fastDecoder) items() ([]pushItemFast, bool) {
	if !d.eat('[') {
		return nil, false
	}
	items := make([]pushItemFast, 0, 100)
	d.ws()
	if d.eat(']') {
		return items, true
	}
	for {
		d.ws()
		var it pushItemFast
		if !d.item(&it) {
			return nil, false
		}
		items = append(items, it)
		d.ws()
		if d.eat(']') {
			return items, true
		}
		if !d.eat(',') {
			return nil, false
		}
	}
}

// item reads one item object. Known keys must hold plain strings (payload: any JSON value but
// null); unknown keys are skipped after validation.
func (d *fastDecoder) item(it *pushItemFast) bool {
	if !d.eat('{') {
		return false
	}
	d.ws()
	if d.eat('}') {
		return false // no queue: the fallback words the error
	}
	for {
		d.ws()
		key, ok := d.plainString()
		if !ok {
			return false
		}
		d.ws()
		if !d.eat(':') {
			return false
		}
		d.ws()
		var dst *span
		switch string(key) {
		case "queue":
			dst = &it.queueSpan
		case "partition":
			dst = &it.partSpan
		case "transactionId":
			dst = &it.txSpan
		case "traceId":
			dst = &it.traceSpan
		case "payload":
			if it.payloadSpan.set || d.i+4 <= len(d.b) && string(d.b[d.i:d.i+4]) == "null" {
				return false
			}
			from := d.i
			if !d.skipValue(0) {
				return false
			}
			it.payloadSpan = span{from, d.i, true}
		default:
			for _, k := range [...]string{"queue", "partition", "transactionId", "traceId", "payload"} {
				if strings.EqualFold(string(key), k) {
					return false
				}
			}
			if !d.skipValue(0) {
				return false
			}
		}
		if dst != nil {
			if dst.set {
				return false
			}
			from := d.i + 1
			if _, ok := d.plainString(); !ok {
				return false
			}
			*dst = span{from, d.i - 1, true}
		}
		d.ws()
		if d.eat('}') {
			return it.queueSpan.set
		}
		if !d.eat(',') {
			return false
		}
	}
}

// plainString reads a string with no escapes and no control characters; non-ASCII bytes must
// be valid UTF-8. It returns the contents, aliasing the body (compared, never kept).
func (d *fastDecoder) plainString() ([]byte, bool) {
	if !d.eat('"') {
		return nil, false
	}
	from := d.i
	ascii := true
	for d.i < len(d.b) {
		d.i = skipPlain8(d.b, d.i)
		if d.i >= len(d.b) {
			break
		}
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[from:d.i]
			d.i++
			if !ascii && !utf8.Valid(s) {
				return nil, false
			}
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.i++
	}
	return nil, false
}

// skipValue moves past one JSON value, validating it (RFC 8259). Strings with escapes are
// allowed here (payloads keep their bytes as sent); non-ASCII must be valid UTF-8.
func (d *fastDecoder) skipValue(depth int) bool {
	if d.i >= len(d.b) || depth > fastMaxDepth {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '{':
		d.i++
		d.ws()
		if d.eat('}') {
			return true
		}
		for {
			d.ws()
			if !d.skipString() {
				return false
			}
			d.ws()
			if !d.eat(':') {
				return false
			}
			d.ws()
			if !d.skipValue(depth + 1) {
				return false
			}
			d.ws()
			if d.eat('}') {
				return true
			}
			if !d.eat(',') {
				return false
			}
		}
	case c == '[':
		d.i++
		d.ws()
		if d.eat(']') {
			return true
		}
		for {
			d.ws()
			if !d.skipValue(depth + 1) {
				return false
			}
			d.ws()
			if d.eat(']') {
				return true
			}
			if !d.eat(',') {
				return false
			}
		}
	case c == '"':
		return d.skipString()
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.skipNumber()
	}
	return false
}

func (d *fastDecoder) literal(lit string) bool {
	if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

// skipString moves past a string, validating escapes and UTF-8.
func (d *fastDecoder) skipString() bool {
	if !d.eat('"') {
		return false
	}
	from := d.i
	ascii := true
	for d.i < len(d.b) {
		// Plain stretches 8 bytes at a time (payload strings are long and plain).
		d.i = skipPlain8(d.b, d.i)
		if d.i >= len(d.b) {
			break
		}
		c := d.b[d.i]
		switch {
		case c == '"':
			ok := ascii || utf8.Valid(d.b[from:d.i])
			d.i++
			return ok
		case c == '\\':
			d.i++
			if d.i >= len(d.b) {
				return false
			}
			switch d.b[d.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(d.b)-d.i < 5 {
					return false
				}
				for _, h := range d.b[d.i+1 : d.i+5] {
					if !isHex(h) {
						return false
					}
				}
				d.i += 4
			default:
				return false
			}
		case c < 0x20:
			return false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.i++
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// skipNumber moves past a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *fastDecoder) skipNumber() bool {
	d.eat('-')
	switch {
	case d.eat('0'):
	case d.i < len(d.b) && d.b[d.i] >= '1' && d.b[d.i] <= '9':
		d.digits()
	default:
		return false
	}
	if d.eat('.') {
		if d.digits() == 0 {
			return false
		}
	}
	if d.i < len(d.b) && (d.b[d.i] == 'e' || d.b[d.i] == 'E') {
		d.i++
		if !d.eat('+') {
			d.eat('-')
		}
		if d.digits() == 0 {
			return false
		}
	}
	// A number must end at a delimiter (the caller checks which one is allowed).
	return d.i == len(d.b) || !isNumberByte(d.b[d.i])
}

func (d *fastDecoder) digits() int {
	from := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i - from
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// skipPlain8 returns the first i' ≥ i such that the 8 bytes at i' hold a byte that needs a
// look ('"', '\\', a control character or non-ASCII), or fewer than 8 bytes remain.
func skipPlain8(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		if needsEscape8(binary.LittleEndian.Uint64(b[i:])) {
			break
		}
	}
	return i
}
