package httpapi

import (
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/combmq/comb/auth"
	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/report"
	"github.com/combmq/comb/seal"
)

// The comb bench workloads through Server.Handler and a real broker (Sync "never": the CPU
// cost of parsing, storing, reading and encoding per message, without sockets or the disk).
// Profile with -cpuprofile; the figures are per request of 100 messages.

func realBenchServer(b *testing.B) *Server {
	return realBenchServerWith(b, benchSecurity{})
}

// benchSecurity is the issue-11 variant of a benchmark server: JWT auth on (HS256; every
// request sends the same token, as a client does), and the queue "bench" encrypted at rest.
type benchSecurity struct {
	name            string
	auth, encrypted bool
}

var benchVariants = []benchSecurity{{"off", false, false}, {"auth", true, false}, {"encrypted", false, true}, {"auth+encrypted", true, true}}

// benchToken is the Authorization header the benchmark requests carry ("" = none).
var benchToken []byte

func realBenchServerWith(b *testing.B, v benchSecurity) *Server {
	cfg := broker.Config{DataDir: b.TempDir(), Sync: "never", Logger: zerolog.Nop()}
	if v.encrypted {
		keys, err := seal.ParseKeyring(strings.Repeat("ab", 32), nil)
		require.NoError(b, err)
		cfg.Keys = keys
	}
	br, err := broker.Open(cfg)
	require.NoError(b, err)
	b.Cleanup(func() { _ = br.Close() })
	scfg := Config{Logger: zerolog.Nop(), DefaultPopTimeout: 1}
	benchToken = nil
	if v.auth {
		a, err := auth.New(auth.Config{Enabled: true, Algorithm: auth.HS256, Secret: "bench-secret"}, zerolog.Nop())
		require.NoError(b, err)
		scfg.Auth = a
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "bench", "role": "read-write",
			"exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte("bench-secret"))
		require.NoError(b, err)
		benchToken = []byte("Bearer " + tok)
	}
	s := New(br, report.New(br.View()), scfg)
	if v.encrypted {
		var ctx fasthttp.RequestCtx
		serve(b, s, &ctx, "POST", "/api/v1/configure", []byte(`{"queue":"bench","options":{"encryptionEnabled":true}}`))
	}
	return s
}

// appendBenchPushBody appends what `comb bench push` sends: 100 items to one partition,
// unique transactionIds, a 200-byte payload.
func appendBenchPushBody(dst []byte, partition string, seq uint64) []byte {
	dst = append(dst, `{"items":[`...)
	for i := range 100 {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"queue":"bench","partition":"`...)
		dst = append(dst, partition...)
		dst = append(dst, `","transactionId":"run1-w3-`...)
		dst = strconv.AppendUint(dst, seq+uint64(i), 10)
		dst = append(dst, `","payload":{"pad":"`...)
		dst = append(dst, benchPad...)
		dst = append(dst, `"}}`...)
	}
	return append(dst, `]}`...)
}

var benchPad = strings.Repeat("x", 190)

// cpuTime is the process's user + system CPU time. The benchmarks report it per op
// ("cpu-ns/op"), which stays meaningful when other work shares the machine and wall-clock ns/op
// does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func serve(b *testing.B, s *Server, ctx *fasthttp.RequestCtx, method, uri string, body []byte) []byte {
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(uri)
	if body != nil {
		ctx.Request.SetBody(body)
	}
	if benchToken != nil {
		ctx.Request.Header.SetBytesV(fasthttp.HeaderAuthorization, benchToken)
	}
	s.Handler(ctx)
	if c := ctx.Response.StatusCode(); c >= 300 {
		b.Fatalf("%s %s: status %d: %s", method, uri, c, ctx.Response.Body())
	}
	return ctx.Response.Body()
}

// BenchmarkRealPush100: one push of 100 new messages per op, 16 partitions in turn.
func BenchmarkRealPush100(b *testing.B) {
	benchPush100(b, realBenchServer(b))
}

// BenchmarkSecurityPush100 is BenchmarkRealPush100 with JWT auth and/or encryption at rest
// (issue 11: the cost of each against off).
func BenchmarkSecurityPush100(b *testing.B) {
	for _, v := range benchVariants {
		b.Run(v.name, func(b *testing.B) { benchPush100(b, realBenchServerWith(b, v)) })
	}
}

// BenchmarkSecurityPopAck100 is BenchmarkRealPopAck100 with JWT auth and/or encryption.
func BenchmarkSecurityPopAck100(b *testing.B) {
	for _, v := range benchVariants {
		b.Run(v.name, func(b *testing.B) { benchPopAck100(b, realBenchServerWith(b, v)) })
	}
}

func benchPush100(b *testing.B, s *Server) {
	var seq atomic.Uint64
	b.SetBytes(100 * 200)
	b.ReportAllocs()
	start := cpuTime()
	defer reportCPU(b, start)
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		var body []byte
		for pb.Next() {
			n := seq.Add(1)
			body = appendBenchPushBody(body[:0], "p"+strconv.Itoa(int(n%16)), n*100)
			serve(b, s, &ctx, "POST", "/api/v1/push", body)
		}
	})
}

// BenchmarkRealPopAck100: a wildcard pop of 100 in a consumer group plus the ack batch of
// everything it returned, per op, from a backlog pushed before the timer starts.
func BenchmarkRealPopAck100(b *testing.B) {
	benchPopAck100(b, realBenchServer(b))
}

func benchPopAck100(b *testing.B, s *Server) {
	var ctx fasthttp.RequestCtx
	var body []byte
	for i := 0; i < b.N+16; i++ {
		body = appendBenchPushBody(body[:0], "p"+strconv.Itoa(i%16), uint64(i)*100)
		serve(b, s, &ctx, "POST", "/api/v1/push", body)
	}
	b.SetBytes(100 * 200)
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	defer reportCPU(b, start)
	b.RunParallel(func(pb *testing.PB) {
		var ctx fasthttp.RequestCtx
		var p fastjson.Parser
		var ack []byte
		for pb.Next() {
			resp := serve(b, s, &ctx, "GET", "/api/v1/pop/queue/bench?batch=100&partitions=1&consumerGroup=g", nil)
			v, err := p.ParseBytes(resp)
			if err != nil {
				b.Fatal(err)
			}
			msgs := v.GetArray("messages")
			if len(msgs) == 0 {
				continue
			}
			ack = append(ack[:0], `{"consumerGroup":"g","acknowledgments":[`...)
			for i, m := range msgs {
				if i > 0 {
					ack = append(ack, ',')
				}
				ack = append(ack, `{"transactionId":"`...)
				ack = append(ack, m.GetStringBytes("transactionId")...)
				ack = append(ack, `","partitionId":"`...)
				ack = append(ack, m.GetStringBytes("partitionId")...)
				ack = append(ack, `","leaseId":"`...)
				ack = append(ack, m.GetStringBytes("leaseId")...)
				ack = append(ack, `","status":"completed"}`...)
			}
			ack = append(ack, `]}`...)
			serve(b, s, &ctx, "POST", "/api/v1/ack/batch", ack)
		}
	})
}

// BenchmarkAuthHeaderCheck: what auth adds per request with a known token whose body is chunked
// or over the cap on refused bodies: the check from the header before the body is read
// (headerReceived) and the one dispatch makes. Other requests pay dispatch's alone.
func BenchmarkAuthHeaderCheck(b *testing.B) {
	s := realBenchServerWith(b, benchSecurity{name: "auth", auth: true})
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/api/v1/pop/queue/bench?batch=100")
	ctx.Request.Header.SetBytesV(fasthttp.HeaderAuthorization, benchToken)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.checkHeader(&ctx.Request.Header); err != nil {
			b.Fatal(err)
		}
		if _, err := s.auth.Check(ctx.Request.URI().PathOriginal(), ctx.Request.Header.Peek(fasthttp.HeaderAuthorization), rw); err != nil {
			b.Fatal(err)
		}
	}
}
