package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestAppendStringEscapes(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain ASCII untouched", "orders-1.x_y", `"orders-1.x_y"`},
		{"quote and backslash", `a"b\c`, `"a\"b\\c"`},
		{"common controls use short escapes", "a\nb\rc\td", `"a\nb\rc\td"`},
		{"other controls use \\u00XX", "\x00\x1f\x08", `"\u0000\u001f\u0008"`},
		{"valid UTF-8 passes through", "héllo ☃ 𝄞", `"héllo ☃ 𝄞"`},
		{"invalid UTF-8 becomes U+FFFD", "a\xffb\xc3", `"a\ufffdb\ufffd"`},
		{"empty", "", `""`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, string(appendString(nil, c.in)))
		})
	}
}

func TestAppendTimeMicros(t *testing.T) {
	cases := []struct {
		name   string
		micros int64
		digits int
		want   string
	}{
		{"createdAt keeps microseconds (spec 0.4)", 1785402764881042, 6, `"2026-07-30T09:12:44.881042Z"`},
		{"other timestamps keep milliseconds", 1785402764881042, 3, `"2026-07-30T09:12:44.881Z"`},
		{"leading zeros in the fraction", 1785402764000007, 6, `"2026-07-30T09:12:44.000007Z"`},
		{"epoch", 0, 6, `"1970-01-01T00:00:00.000000Z"`},
		{"before the epoch", -1, 6, `"1969-12-31T23:59:59.999999Z"`},
		{"RFC 3339: a year past 9999 is clamped to the last writable instant", 600_000_000_000_000_000, 6, `"9999-12-31T23:59:59.999999Z"`},
		{"RFC 3339: int64 max µs is clamped", 1<<63 - 1, 3, `"9999-12-31T23:59:59.999Z"`},
		{"RFC 3339: a year before 0000 is clamped to the first writable instant", -1 << 63, 6, `"0000-01-01T00:00:00.000000Z"`},
		{"RFC 3339: the last writable instant is kept", 253402300799999999, 6, `"9999-12-31T23:59:59.999999Z"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := string(appendTimeMicros(nil, c.micros, c.digits))
			require.Equal(t, c.want, got)
			parsed, err := time.Parse(time.RFC3339Nano, got[1:len(got)-1])
			require.NoError(t, err)
			if c.digits == 6 && !strings.HasPrefix(c.name, "RFC 3339: a year") {
				require.Equal(t, c.micros, parsed.UnixMicro())
			}
		})
	}
}

func TestCreatedAtCacheFormatsEachTimestampOnce(t *testing.T) {
	var c createdAtCache
	b := c.append(nil, 1785402764881042)
	b = c.append(b, 1785402764881042)
	b = c.append(b, 1)
	require.Equal(t, `"2026-07-30T09:12:44.881042Z""2026-07-30T09:12:44.881042Z""1970-01-01T00:00:00.000001Z"`, string(b))
	allocs := testing.AllocsPerRun(100, func() { b = c.append(b[:0], 1785402764881042) })
	require.Zero(t, allocs)
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `q"b\`, "\x00\n\u2028", "é", "\xff\xfe", "𝄞"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := appendString(nil, s)
		var back string
		require.NoError(t, json.Unmarshal(out, &back), "%q -> %q", s, out)
		if utf8.ValidString(s) {
			require.Equal(t, s, back)
		}
	})
}

func FuzzPercentDecode(f *testing.F) {
	for _, s := range []string{"", "a%2Fb", "%", "%zz", "%4", "a+b", "%00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, ok := percentDecode([]byte(s))
		if ok && len(out) > len(s) {
			t.Fatalf("decoded %q longer than %q", out, s)
		}
	})
}

func TestAppendStringFastPathAgreesWithTheByteLoop(t *testing.T) {
	// Every byte value at every position of a 17-byte string (two SWAR words and a tail): the
	// 8-byte check must send each string needing work to the byte loop and copy the rest as is.
	base := []byte("abcdefghijklmnopq")
	for pos := range base {
		for c := 0; c < 256; c++ {
			s := append([]byte(nil), base...)
			s[pos] = byte(c)
			got := string(appendString(nil, string(s)))
			want := string(appendStringSlow(nil, string(s)))
			require.Equal(t, want, got, "byte %#x at %d", c, pos)
		}
	}
	for _, s := range []string{"", "a", "0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01", "run1-w3-12345", "queued"} {
		require.Equal(t, `"`+s+`"`, string(appendString(nil, s)), "plain ASCII is copied unchanged")
	}
}

func FuzzAppendStringFastPath(f *testing.F) {
	for _, s := range []string{"", "plain ascii text", `0123456"89`, "abcdefg\x7f\x80", "tab\there"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		require.Equal(t, string(appendStringSlow(nil, s)), string(appendString(nil, s)))
	})
}

func BenchmarkAppendStringUUID(b *testing.B) {
	s := "0198e4c0-6c1a-7a11-9d3e-2f0c5b7e8a01"
	buf := make([]byte, 0, 64)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		buf = appendString(buf[:0], s)
	}
}
