package httpapi

import "unsafe"

// b2s views b as a string without copying. Only for strings used during the request (parsing,
// lookups): b is fasthttp's request buffer, reused by the next request on the connection.
func b2s(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// strArena copies the string fields of one request into one allocation, so parsing an ack batch
// of N items costs one allocation instead of 4N, and the strings stay valid after the request
// (the broker may keep them: an error text on a DLQ entry, say). Bytes are only ever appended,
// never rewritten, so every string handed out stays immutable.
type strArena struct{ buf []byte }

// newStrArena sizes the arena for a body of n bytes: unescaped JSON strings are never longer
// than their escaped form, so all fields of the body fit and the arena never grows.
func newStrArena(n int) strArena { return strArena{buf: make([]byte, 0, n)} }

// str copies b into the arena; a nil arena copies nothing and returns b's own bytes as a
// string (the caller keeps b's memory alive and unchanged for as long as the string is used).
func (a *strArena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if a == nil {
		return b2s(b)
	}
	if cap(a.buf)-len(a.buf) < len(b) {
		// Not reached for fields of the body the arena was sized for; kept for safety. The old
		// array stays alive as long as strings point into it.
		a.buf = make([]byte, 0, 2*cap(a.buf)+len(b))
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return unsafe.String(&a.buf[start], len(b))
}
