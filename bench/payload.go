package bench

import "bytes"

// MinTimedPayload is the smallest payload that can carry a send time:
// {"t":<19 digits>,"pad":""}.
const MinTimedPayload = len(`{"t":`) + timeDigits + len(`,"pad":""}`)

const timeDigits = 19 // Unix ns until the year 2286

// Payload is one reusable message body of a fixed size. Stamp rewrites the send time in place,
// so a worker builds it once and never allocates per message.
type Payload struct {
	buf   []byte
	timed bool
}

// NewPayload returns a JSON value of exactly size bytes (size >= 2). From MinTimedPayload bytes
// on it is an object whose "t" field holds the send time; below that it is a string of x's.
func NewPayload(size int) *Payload {
	if size < 2 {
		size = 2
	}
	p := &Payload{buf: make([]byte, 0, size)}
	if size < MinTimedPayload {
		p.buf = append(p.buf, '"')
		p.buf = append(p.buf, bytes.Repeat([]byte{'x'}, size-2)...)
		p.buf = append(p.buf, '"')
		return p
	}
	p.timed = true
	p.buf = append(p.buf, `{"t":`...)
	p.buf = append(p.buf, bytes.Repeat([]byte{' '}, timeDigits-1)...)
	p.buf = append(p.buf, '0')
	p.buf = append(p.buf, `,"pad":"`...)
	p.buf = append(p.buf, bytes.Repeat([]byte{'x'}, size-MinTimedPayload)...)
	p.buf = append(p.buf, `"}`...)
	return p
}

// Stamp writes unixNanos (>= 0) into the "t" field, right-aligned in its 19 bytes and padded
// on the left with spaces (JSON allows whitespace before a value, not leading zeros); a no-op
// for untimed payloads.
func (p *Payload) Stamp(unixNanos int64) {
	if !p.timed {
		return
	}
	d := p.buf[5 : 5+timeDigits]
	i := len(d) - 1
	for ; i >= 0; i-- {
		d[i] = byte('0' + unixNanos%10)
		unixNanos /= 10
		if unixNanos == 0 {
			break
		}
	}
	for i--; i >= 0; i-- {
		d[i] = ' '
	}
}

// Bytes is the payload; it is overwritten by the next Stamp.
func (p *Payload) Bytes() []byte { return p.buf }

// PayloadTime extracts the "t" field (Unix ns) of a payload, tolerating the whitespace and key
// order a Queen-compatible server may introduce when it re-serialises JSON (PostgreSQL jsonb
// does). It returns 0 when there is none.
func PayloadTime(b []byte) int64 {
	i := bytes.Index(b, []byte(`"t"`))
	if i < 0 {
		return 0
	}
	i += 3
	for i < len(b) && (b[i] == ' ' || b[i] == ':' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	var v int64
	start := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		v = v*10 + int64(b[i]-'0')
		i++
	}
	if i == start {
		return 0
	}
	return v
}
