package httpapi

import (
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// Responses are built by appending into a pooled []byte (performance.md: 3.8-4.4x faster than
// encoding/json for pop) and handed to fasthttp with SwapBody, which gives back the response's
// previous buffer; that one goes into the pool instead, so a steady state allocates nothing.

// maxPooledBuf keeps one huge response (a 64 MiB DLQ page) from pinning its buffer forever.
const maxPooledBuf = 4 << 20

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func getBuf() *[]byte {
	p := bufPool.Get().(*[]byte)
	*p = (*p)[:0]
	return p
}

func putBuf(p *[]byte) {
	if cap(*p) > maxPooledBuf {
		return
	}
	*p = (*p)[:0]
	bufPool.Put(p)
}

// hexDigits serves \u00XX escapes.
const hexDigits = "0123456789abcdef"

// safeASCII[c] is true for bytes that go into a JSON string unescaped.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString appends s as a quoted JSON string. Control characters, quote and backslash are
// escaped; invalid UTF-8 (possible in percent-decoded path names) becomes U+FFFD so the output
// is always valid JSON.
//
// Nearly every string comb writes (ids, names, transactionIds, statuses) is printable ASCII, so
// the scan first checks 8 bytes at a time and copies the whole string when nothing needs work
// (a push answer of 100 items encodes ~700 strings; the byte loop was 8 % of push CPU).
func appendString(b []byte, s string) []byte {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if needsEscape8(x) {
			break
		}
	}
	for ; i < len(s) && s[i] < utf8.RuneSelf && safeASCII[s[i]]; i++ {
	}
	if i == len(s) {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	return appendStringSlow(b, s)
}

// SWAR constants: lo has 0x01 in every byte, hi 0x80.
const (
	swarLo = 0x0101010101010101
	swarHi = 0x8080808080808080
)

// needsEscape8 reports whether any of the 8 bytes in x is a control character (< 0x20), '"',
// '\\' or non-ASCII (≥ 0x80). The zero-byte test ((v - lo) &^ v & hi) never misses a match, so a
// false answer is exact; a true one sends the string down the byte-by-byte path.
func needsEscape8(x uint64) bool {
	quote := x ^ (swarLo * '"')
	slash := x ^ (swarLo * '\\')
	ctl := (x - swarLo*0x20) &^ x
	q := (quote - swarLo) &^ quote
	bs := (slash - swarLo) &^ slash
	return (ctl|q|bs|x)&swarHi != 0
}

// appendStringSlow is appendString for strings that need escaping or hold non-ASCII bytes.
func appendStringSlow(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendUUIDString appends s quoted without the escape scan: only for ids the broker writes as
// canonical UUID text (hex digits and '-'; broker.Message.ID), which never need escaping.
func appendUUIDString(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendStringOrNull encodes "" as null (spec: traceId, producerSub, error and friends).
func appendStringOrNull(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

// appendKey appends `"key":` after a comma unless it opens the object; key must need no escaping.
func appendKey(b []byte, key string, first bool) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

func appendBool(b []byte, v bool) []byte { return strconv.AppendBool(b, v) }

func appendInt(b []byte, v int64) []byte { return strconv.AppendInt(b, v, 10) }

// appendRaw appends a stored JSON value unchanged (it was validated on push); nil is null.
func appendRaw(b []byte, raw []byte) []byte {
	if len(raw) == 0 {
		return append(b, "null"...)
	}
	return append(b, raw...)
}

// appendTimeMicros appends tsMicros (µs since the Unix epoch) as a quoted ISO-8601 UTC string
// with `digits` fractional digits (6 for message createdAt, 3 elsewhere; spec 0.4) and `Z`.
//
// Times outside years 0000..9999 are clamped to the nearest end of that range: RFC 3339 has
// exactly four year digits, and a client parsing "248130-07-08T…" fails outright.
func appendTimeMicros(b []byte, tsMicros int64, digits int) []byte {
	tsMicros = min(max(tsMicros, minRFC3339Micros), maxRFC3339Micros)
	t := time.UnixMicro(tsMicros).UTC()
	year, month, day := t.Date()
	hour, minute, sec := t.Clock()
	b = append(b, '"')
	b = append4(b, year)
	b = append(b, '-')
	b = append2(b, int(month))
	b = append(b, '-')
	b = append2(b, day)
	b = append(b, 'T')
	b = append2(b, hour)
	b = append(b, ':')
	b = append2(b, minute)
	b = append(b, ':')
	b = append2(b, sec)
	frac := t.Nanosecond() / 1000
	b = append(b, '.')
	if digits == 3 {
		frac /= 1000
		b = append(b, byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	} else {
		for div := 100000; div > 0; div /= 10 {
			b = append(b, byte('0'+frac/div%10))
		}
	}
	return append(b, 'Z', '"')
}

// The µs range RFC 3339 can write: 0000-01-01T00:00:00.000000Z .. 9999-12-31T23:59:59.999999Z.
var (
	minRFC3339Micros = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	maxRFC3339Micros = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro() - 1
)

// appendTimeOrNull encodes tsMicros 0 as null.
func appendTimeOrNull(b []byte, tsMicros int64, digits int) []byte {
	if tsMicros == 0 {
		return append(b, "null"...)
	}
	return appendTimeMicros(b, tsMicros, digits)
}

func append2(b []byte, v int) []byte { return append(b, byte('0'+v/10), byte('0'+v%10)) }

func append4(b []byte, v int) []byte {
	return append(b, byte('0'+v/1000), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}

// createdAtCache formats each distinct segment timestamp once per response: every message of
// one push shares it (spec 0.5), and time formatting was 28 % of pop's CPU (performance.md).
type createdAtCache struct {
	ts  int64
	arr [48]byte // quoted, 6 fractional digits; an array so the cache itself never allocates
	n   int
	ok  bool
}

func (c *createdAtCache) append(b []byte, tsMicros int64) []byte {
	if !c.ok || c.ts != tsMicros {
		c.n = len(appendTimeMicros(c.arr[:0], tsMicros, 6))
		c.ts, c.ok = tsMicros, true
	}
	return append(b, c.arr[:c.n]...)
}

// appendDecryptionError adds the flag of a message whose stored payload is encrypted and could
// not be decrypted (issue 11; spec 9.2): "data" is then null, never the ciphertext, and
// "decryptionError" says why. Clients ignore fields they do not know.
func appendDecryptionError(b []byte, reason string) []byte {
	b = append(b, `,"decryptionError":`...)
	return appendString(b, reason)
}
