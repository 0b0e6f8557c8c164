package httpapi

import (
	"bytes"
	"math"
	"strconv"
	"time"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"
)

// Cold routes (status, analytics) encode typed structs with goccy/go-json
// instead of appending bytes by hand: their cost is in the broker's reads,
// not in the encoding, and a struct reads like the spec's shape.

// sendValue answers status with v encoded as JSON. HTML characters are not
// escaped (as the hot encoders do not); strings that must read exactly as
// the hot paths write them use wireString.
func (s *Server) sendValue(ctx *fasthttp.RequestCtx, status int, v any) {
	p := getBuf()
	b, err := appendJSON((*p)[:0], v)
	if err != nil {
		putBuf(p)
		s.fail(ctx, err)
		return
	}
	*p = b
	sendJSON(ctx, status, p)
}

// appendJSON appends v encoded with HTML characters left as they are.
func appendJSON(b []byte, v any) ([]byte, error) {
	buf := bytes.NewBuffer(b)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return b, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// wireString encodes a string exactly as the hot encoders do (appendString:
// control characters as \u00XX, U+2028 as is, invalid UTF-8 as U+FFFD), so a
// route moved from appended bytes to a struct answers the same bytes.
type wireString string

func (s wireString) MarshalJSON() ([]byte, error) { return appendString(nil, string(s)), nil }

// nullString is a wireString with "" encoded as null (appendStringOrNull).
type nullString string

func (s nullString) MarshalJSON() ([]byte, error) { return appendStringOrNull(nil, string(s)), nil }

// fixed2 encodes a float with exactly 2 decimals (Queen's lag_hours).
type fixed2 float64

func (f fixed2) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(f), 'f', 2, 64), nil
}

// keyed is a JSON object whose keys keep their order and are escaped as
// wireString (a map would sort them and escape them its own way).
type keyed[V any] []keyedField[V]

type keyedField[V any] struct {
	Key   string
	Value V
}

func (k keyed[V]) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range k {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, f.Key)
		b = append(b, ':')
		var err error
		if b, err = appendJSON(b, f.Value); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// float3 encodes a float rounded to 3 decimals (appendFloat).
type float3 float64

func (f float3) MarshalJSON() ([]byte, error) { return appendFloat(nil, float64(f)), nil }

// isoTime is a time encoded as spec 0.4's UTC ISO-8601 with milliseconds.
type isoTime time.Time

func (t isoTime) MarshalJSON() ([]byte, error) {
	return appendTimeMicros(nil, time.Time(t).UnixMicro(), 3), nil
}

// isoMicros is a timestamp in µs since the Unix epoch, encoded as isoTime; 0 is null.
type isoMicros int64

func (t isoMicros) MarshalJSON() ([]byte, error) { return appendTimeOrNull(nil, int64(t), 3), nil }

// bucketTime is a bucket start as Queen writes them: seconds, no fraction.
type bucketTime time.Time

func (t bucketTime) MarshalJSON() ([]byte, error) {
	return []byte(time.Time(t).UTC().Format(`"2006-01-02T15:04:05Z"`)), nil
}

// round2 rounds to 2 decimals (Queen's per-second rates); NaN and ±Inf are 0.
func round2(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return math.Round(v*100) / 100
}

// timeRange reads the from and to parameters (ISO-8601), defaulting to the
// window back from now; to before from swaps them.
func timeRange(q queryArgs, now time.Time, back time.Duration) (time.Time, time.Time) {
	from, to := now.Add(-back), now
	if us, ok := parseISO(q.str("to")); ok {
		to = time.UnixMicro(us)
	}
	if us, ok := parseISO(q.str("from")); ok {
		from = time.UnixMicro(us)
	} else if q.str("to") != "" {
		from = to.Add(-back)
	}
	if to.Before(from) {
		from, to = to, from
	}
	return from.UTC(), to.UTC()
}
