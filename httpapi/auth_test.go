package httpapi

import (
	"bufio"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/auth"
	"github.com/combmq/comb/broker"
)

const testSecret = "s3cret"

// specLevels is the spec's route table (auth column; 9.1 "Rules of thumb") for every route
// comb serves. TestRouteTableLevels holds routes.go to it both ways.
var specLevels = map[string]auth.Level{
	"OPTIONS *":                    auth.Public,
	"GET /health":                  auth.Public,
	"GET /metrics":                 auth.Public,
	"GET /metrics/prometheus":      auth.Public,
	"POST /api/v1/push":            auth.ReadWrite,
	"POST /api/v1/configure":       auth.ReadWrite,
	"GET /api/v1/pop":              auth.ReadWrite,
	"GET /api/v1/pop/queue/:queue": auth.ReadWrite,
	"GET /api/v1/pop/queue/:queue/partition/:partition": auth.ReadWrite,
	"POST /api/v1/ack":                                                             auth.ReadWrite,
	"POST /api/v1/ack/batch":                                                       auth.ReadWrite,
	"POST /api/v1/transaction":                                                     auth.ReadWrite,
	"POST /api/v1/lease/:leaseId/extend":                                           auth.ReadWrite,
	"POST /streams/v1/queries":                                                     auth.ReadWrite,
	"POST /streams/v1/cycle":                                                       auth.ReadWrite,
	"POST /streams/v1/state/get":                                                   auth.ReadWrite,
	"GET /api/v1/streams/queries":                                                  auth.ReadOnly, // comb's own read route
	"GET /api/v1/cluster":                                                          auth.ReadOnly, // comb's own (issue 15)
	"POST /api/v1/cluster/members":                                                 auth.Admin,
	"DELETE /api/v1/cluster/members/:id":                                           auth.Admin,
	"GET /api/v1/consumer-groups":                                                  auth.ReadOnly,
	"GET /api/v1/consumer-groups/lagging":                                          auth.ReadOnly,
	"GET /api/v1/consumer-groups/:group":                                           auth.ReadOnly,
	"POST /api/v1/consumer-groups/:group/subscription":                             auth.ReadWrite,
	"DELETE /api/v1/consumer-groups/:group":                                        auth.Admin,
	"DELETE /api/v1/consumer-groups/:group/queues/:queue":                          auth.Admin,
	"POST /api/v1/consumer-groups/:group/queues/:queue/seek":                       auth.ReadWrite,
	"POST /api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek": auth.ReadWrite,
	"POST /api/v1/stats/refresh":                                                   auth.Admin,
	"DELETE /api/v1/resources/queues/:queue":                                       auth.Admin,
	"GET /api/v1/resources/overview":                                               auth.ReadOnly,
	"GET /api/v1/resources/queues":                                                 auth.ReadOnly,
	"GET /api/v1/resources/queues/:queue":                                          auth.ReadOnly,
	"GET /api/v1/resources/namespaces":                                             auth.ReadOnly,
	"GET /api/v1/resources/tasks":                                                  auth.ReadOnly,
	"GET /api/v1/dlq":                                                              auth.ReadOnly,
	"GET /api/v1/messages":                                                         auth.ReadOnly,
	"GET /api/v1/messages/:partitionId/:transactionId":                             auth.ReadOnly,
	"DELETE /api/v1/messages/:partitionId/:transactionId":                          auth.ReadWrite,
	"POST /api/v1/traces":                                                          auth.ReadWrite,
	"GET /api/v1/traces/names":                                                     auth.ReadOnly,
	"GET /api/v1/traces/by-name/:traceName":                                        auth.ReadOnly,
	"GET /api/v1/traces/:partitionId/:transactionId":                               auth.ReadOnly,
	"GET /api/v1/system/maintenance":                                               auth.Admin,
	"POST /api/v1/system/maintenance":                                              auth.Admin,
	"GET /api/v1/system/maintenance/pop":                                           auth.Admin,
	"POST /api/v1/system/maintenance/pop":                                          auth.Admin,
	"GET /api/v1/status":                                                           auth.ReadOnly,
	"GET /api/v1/status/queues":                                                    auth.ReadOnly,
	"GET /api/v1/status/queues/:queue":                                             auth.ReadOnly,
	"GET /api/v1/status/queues/:queue/messages":                                    auth.ReadOnly,
	"GET /api/v1/status/analytics":                                                 auth.ReadOnly,
	"GET /api/v1/status/buffers":                                                   auth.ReadOnly,
	"GET /api/v1/analytics/worker-metrics":                                         auth.ReadOnly,
	"GET /api/v1/analytics/queue-ops":                                              auth.ReadOnly,
	"GET /api/v1/analytics/queue-lag":                                              auth.ReadOnly,
	"GET /api/v1/analytics/system-metrics":                                         auth.ReadOnly,
	"GET /api/v1/analytics/retention":                                              auth.ReadOnly,
	"GET /api/v1/analytics/queue-parked-replicas":                                  auth.ReadOnly,
	"GET /api/v1/analytics/postgres-stats":                                         auth.ReadOnly,
	"GET /api/v1/migration/:op":                                                    auth.Admin,
	"POST /api/v1/migration/:op":                                                   auth.Admin,
	"GET /api/v1/storage":                                                          auth.ReadOnly, // comb's own (issue 25)
}

// issue 11: "the level of every route is listed in one table in the code, and a test walks
// every registered route and asserts its level, so a new route cannot ship unclassified".
func TestRouteTableLevels(t *testing.T) {
	seen := map[string]bool{}
	for i := range routes {
		r := &routes[i]
		key := r.method + " " + r.pattern
		require.False(t, seen[key], "%s is registered twice", key)
		seen[key] = true
		require.NotEqual(t, auth.Unset, r.level, "%s has no auth level", key)
		want, ok := specLevels[key]
		require.True(t, ok, "%s is not in the spec's route table: add it to specLevels with its level", key)
		require.Equal(t, want, r.level, "%s", key)
		// The pattern, with its parameters filled, reaches this very route.
		var req request
		got := table.match([]byte(r.method), []byte(samplePath(r.pattern)), &req)
		require.Same(t, r, got, "%s is shadowed by an earlier route", key)
	}
	for key := range specLevels {
		require.True(t, seen[key], "%s is in the spec's table but not registered", key)
	}
}

// samplePath fills a pattern's parameters with "x" ("*" becomes an API path).
func samplePath(pattern string) string {
	if pattern == "*" {
		return "/api/v1/anything"
	}
	segs := strings.Split(pattern, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, ":") {
			segs[i] = "x"
		}
	}
	return strings.Join(segs, "/")
}

func hsToken(t *testing.T, secret string, claims jwt.MapClaims) string {
	t.Helper()
	if _, ok := claims["iat"]; !ok {
		claims["iat"] = time.Now().Unix()
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
	require.NoError(t, err)
	return s
}

func authServer(t *testing.T, fake *fakeBackend, cfg auth.Config) *testServer {
	t.Helper()
	cfg.Enabled = true
	a, err := auth.New(cfg, zerolog.Nop())
	require.NoError(t, err)
	return startServer(t, fake, Config{Auth: a})
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

// Every registered route over HTTP, with no token and with a token of each role: the route's
// level decides between 401, 403 and reaching the handler (spec 9.1).
func TestAuthWalksEveryRoute(t *testing.T) {
	fake := newFake()
	ts := authServer(t, fake, auth.Config{Algorithm: auth.HS256, Secret: testSecret})
	roles := []struct {
		role  string
		level auth.Level
	}{{"admin", auth.Admin}, {"read-write", auth.ReadWrite}, {"read-only", auth.ReadOnly}, {"guest", auth.NoRole}}
	for i := range routes {
		r := &routes[i]
		path := samplePath(r.pattern)
		t.Run(r.method+" "+r.pattern, func(t *testing.T) {
			resp := ts.doRaw(r.method, path, "", nil)
			if r.level == auth.Public {
				require.NotEqual(t, http.StatusUnauthorized, resp.status)
				return
			}
			requireJSON(t, resp, http.StatusUnauthorized, `{"error":"Authentication required"}`)
			require.Equal(t, "Bearer", resp.header.Get("WWW-Authenticate"))
			for _, ro := range roles {
				tok := hsToken(t, testSecret, jwt.MapClaims{"sub": ro.role, "role": ro.role})
				resp := ts.doRaw(r.method, path, "", bearer(tok))
				if ro.level.Allows(r.level) {
					require.NotContains(t, []int{401, 403}, resp.status, "%s: body %s", ro.role, resp.body)
				} else {
					requireJSON(t, resp, http.StatusForbidden, `{"error":"Insufficient permissions"}`)
				}
			}
		})
	}
}

// Every refusal body of issue 11, byte for byte, over HTTP.
func TestAuthErrorBodies(t *testing.T) {
	fake := newFake()
	ts := authServer(t, fake, auth.Config{Algorithm: auth.HS256, Secret: testSecret, Issuer: "idp", Audience: "comb"})
	ok := jwt.MapClaims{"sub": "a", "role": "read-only", "iss": "idp", "aud": "comb"}
	with := func(kv ...any) jwt.MapClaims {
		c := jwt.MapClaims{}
		for k, v := range ok {
			c[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			c[kv[i].(string)] = kv[i+1]
		}
		return c
	}
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	rs, err := jwt.NewWithClaims(jwt.SigningMethodRS256, ok).SignedString(rk)
	require.NoError(t, err)
	cases := []struct {
		name, header string
		status       int
		body         string
	}{
		{"no header", "", 401, `{"error":"Authentication required"}`},
		{"bad signature", "Bearer " + hsToken(t, "wrong", with()), 401, `{"error":"Invalid token signature"}`},
		{"expired", "Bearer " + hsToken(t, testSecret, with("exp", time.Now().Add(-time.Hour).Unix())), 401, `{"error":"Token has expired"}`},
		{"issuer", "Bearer " + hsToken(t, testSecret, with("iss", "evil")), 401, `{"error":"Invalid token issuer"}`},
		{"audience", "Bearer " + hsToken(t, testSecret, with("aud", "other")), 401, `{"error":"Invalid token audience"}`},
		{"algorithm", "Bearer " + rs, 401, `{"error":"Token uses RS256, expected HS256"}`},
		{"role too low", "Bearer " + hsToken(t, testSecret, with()), 403, `{"error":"Insufficient permissions"}`},
		{"lower-case bearer, right role", "bearer " + hsToken(t, testSecret, with("role", "read-write")), 201, `[]`},
		{"no prefix, right role", hsToken(t, testSecret, with("role", "read-write")), 201, `[]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := map[string]string{}
			if c.header != "" {
				h["Authorization"] = c.header
			}
			requireJSON(t, ts.doRaw("POST", "/api/v1/push", `{"items":[]}`, h), c.status, c.body)
		})
	}
	resp := ts.doRaw("POST", "/api/v1/push", `{"items":[]}`, map[string]string{"Authorization": "Bearer not.a.jwt"})
	require.Equal(t, 401, resp.status)
	require.True(t, strings.HasPrefix(resp.json(t).(map[string]any)["error"].(string), "Invalid token: "), "%s", resp.body)

	// Unlisted routes need read-write (spec 9.1), then they are 404.
	requireJSON(t, ts.doRaw("GET", "/api/v1/no-such-route", "", nil), 401, `{"error":"Authentication required"}`)
	rwTok := hsToken(t, testSecret, with("role", "read-write"))
	requireJSON(t, ts.doRaw("GET", "/api/v1/no-such-route", "", bearer(rwTok)), 404, `{"error":"Not Found"}`)
	requireJSON(t, ts.doRaw("GET", "/api/v1/resources/queues", "", bearer(hsToken(t, testSecret, with("role", "guest")))), 403, `{"error":"Insufficient permissions"}`)

	prom := ts.do("GET", "/metrics/prometheus", "")
	require.Equal(t, 200, prom.status, "public without a token")
	require.Contains(t, string(prom.body), `comb_auth_refused_total{scope="cluster",status="401"} 8`)
	require.Contains(t, string(prom.body), `comb_auth_refused_total{scope="cluster",status="403"} 2`)
}

// 401 "Unknown key ID: <kid>" and 500 when the JWK set cannot be fetched, over HTTP.
func TestAuthJWKSErrors(t *testing.T) {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	up := true
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		b64 := base64.RawURLEncoding.EncodeToString
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{"kty": "RSA", "kid": "k1",
			"n": b64(rk.N.Bytes()), "e": b64(big.NewInt(int64(rk.E)).Bytes())}}})
	}))
	defer jwks.Close()
	sign := func(kid string) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"sub": "r", "role": "read-only"})
		tok.Header["kid"] = kid
		s, err := tok.SignedString(rk)
		require.NoError(t, err)
		return s
	}
	ts := authServer(t, newFake(), auth.Config{Algorithm: auth.RS256, JWKSURL: jwks.URL})
	require.Equal(t, 200, ts.doRaw("GET", "/api/v1/dlq", "", bearer(sign("k1"))).status)
	requireJSON(t, ts.doRaw("GET", "/api/v1/dlq", "", bearer(sign("nope"))), 401, `{"error":"Unknown key ID: nope"}`)

	up = false
	down := authServer(t, newFake(), auth.Config{Algorithm: auth.RS256, JWKSURL: jwks.URL})
	requireJSON(t, down.doRaw("GET", "/api/v1/dlq", "", bearer(sign("k1"))), 500, `{"error":"Failed to fetch JWKS"}`)
}

// spec 1.5 / 11 #45: with auth, pushes and transaction pushes carry the token's sub; a body
// producerSub is ignored with or without auth ([C-go] auth_test.go).
func TestProducerSubStamped(t *testing.T) {
	body := `{"items":[{"queue":"q","payload":{"a":1},"producerSub":"mallory"},{"queue":"q","payload":2}]}`
	txBody := `{"operations":[{"type":"push","items":[{"queue":"q","payload":1,"producerSub":"mallory"}]}]}`

	fake := newFake()
	ts := authServer(t, fake, auth.Config{Algorithm: auth.HS256, Secret: testSecret})
	tok := hsToken(t, testSecret, jwt.MapClaims{"sub": "alice", "username": "alice", "role": "read-write", "exp": time.Now().Add(time.Hour).Unix()})
	require.Equal(t, 201, ts.doRaw("POST", "/api/v1/push", body, bearer(tok)).status)
	require.Len(t, fake.pushed, 2)
	for _, it := range fake.pushed {
		require.Equal(t, "alice", it.ProducerSub)
	}
	require.Equal(t, 200, ts.doRaw("POST", "/api/v1/transaction", txBody, bearer(tok)).status)
	require.Equal(t, []broker.TxOp{{Type: "push", Push: broker.PushItem{Queue: "q", Payload: []byte("1"), ProducerSub: "alice"}}}, fake.txOps)

	noSub := hsToken(t, testSecret, jwt.MapClaims{"role": "admin"})
	require.Equal(t, 201, ts.doRaw("POST", "/api/v1/push", body, bearer(noSub)).status)
	require.Equal(t, "", fake.pushed[0].ProducerSub, "a token without sub stamps nothing")

	open := newFake()
	ots := startServer(t, open, Config{})
	require.Equal(t, 201, ots.do("POST", "/api/v1/push", body).status)
	require.Equal(t, "", open.pushed[0].ProducerSub, "auth off: the body value is ignored")
	require.Equal(t, 200, ots.do("POST", "/api/v1/transaction", txBody).status)
	require.Equal(t, "", open.txOps[0].Push.ProducerSub)
}

// FuzzAuthorizationHeader drives the whole handler with arbitrary Authorization values and
// paths on an auth-enabled server: the answer is a pass (a route's own status) only for a token
// signed with the secret, else a JSON 401/403 with a message; it never panics (the handler
// would answer 500).
func FuzzAuthorizationHeader(f *testing.F) {
	a, err := auth.New(auth.Config{Enabled: true, Algorithm: auth.Auto, Secret: testSecret}, zerolog.Nop())
	require.NoError(f, err)
	fake := newFake()
	srv := New(fake, fake, Config{Auth: a, Logger: zerolog.Nop()})
	good, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "a", "role": "read-only"}).SignedString([]byte(testSecret))
	require.NoError(f, err)
	for _, h := range []string{"", "Bearer " + good, good, "bearer x.y.z", "Bearer " + good + "x", "Basic abc"} {
		f.Add("/api/v1/resources/queues", h)
		f.Add("/api/v1/push", h)
	}
	f.Fuzz(func(t *testing.T, path, header string) {
		if path == "" || path[0] != '/' || strings.ContainsAny(path, " \r\n?#") || strings.ContainsAny(header, "\r\n\x00") {
			return // not a request line / header fasthttp would hand to the handler
		}
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("GET")
		ctx.Request.SetRequestURI(path)
		if header != "" {
			ctx.Request.Header.Set("Authorization", header)
		}
		srv.Handler(&ctx)
		st := ctx.Response.StatusCode()
		if st == 500 {
			t.Fatalf("path %q header %q: 500 %s", path, header, ctx.Response.Body())
		}
		if st == 401 || st == 403 {
			var body map[string]string
			if err := json.Unmarshal(ctx.Response.Body(), &body); err != nil || body["error"] == "" {
				t.Fatalf("refusal without a JSON error: %q", ctx.Response.Body())
			}
			return
		}
		tok := auth.TokenFromHeader([]byte(header))
		public := map[string]bool{"/": true, "/health": true, "/metrics": true, "/metrics/prometheus": true} // default JWT_SKIP_PATHS
		// The path as routed and as checked is the same one (a scheme-relative "//host/p" is "/p").
		if _, err := a.Verify(tok); err != nil && !public[string(ctx.Request.URI().PathOriginal())] {
			t.Fatalf("path %q header %q answered %d without a valid token", path, header, st)
		}
	})
}

// An unauthenticated request may not make the server read a large body: past 1 MiB it is
// answered its 401 at once (here announced as 10 MiB and never sent), not read up to --max-body.
// Under the cap a refused request is read and answered as usual; a caller whose token passes
// still pushes bodies past it.
func TestAuthCapsUnauthenticatedBodies(t *testing.T) {
	fake := newFake()
	ts := authServer(t, fake, auth.Config{Algorithm: auth.HS256, Secret: testSecret})
	conn, err := net.DialTimeout("tcp", ts.addr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	fmt.Fprintf(conn, "POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", 10<<20)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "answered before the body arrived")
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, 401, resp.StatusCode)
	require.JSONEq(t, `{"error":"Authentication required"}`, string(body))

	ro := hsToken(t, testSecret, jwt.MapClaims{"role": "read-only"})
	under := `{"items":[{"queue":"q","payload":"` + strings.Repeat("x", 900<<10) + `"}]}`
	requireJSON(t, ts.doRaw("POST", "/api/v1/push", under, bearer(ro)), 403, `{"error":"Insufficient permissions"}`)
	big := `{"items":[{"queue":"q","payload":"` + strings.Repeat("x", 2<<20) + `"}]}`
	rwTok := hsToken(t, testSecret, jwt.MapClaims{"role": "read-write"})
	r := ts.doRaw("POST", "/api/v1/push", big, bearer(rwTok))
	require.Equal(t, 201, r.status, "%s", r.body)
	require.Len(t, fake.pushed, 1)
}

// The cap on refused bodies never lifts --max-body: with --max-body under 1 MiB, a refused
// request announcing more than --max-body is answered its 401 at once, without its body being
// read (it used to be allowed up to 1 MiB).
func TestAuthCapIsNeverAboveMaxBody(t *testing.T) {
	fake := newFake()
	a, err := auth.New(auth.Config{Enabled: true, Algorithm: auth.HS256, Secret: testSecret}, zerolog.Nop())
	require.NoError(t, err)
	ts := startServer(t, fake, Config{Auth: a, MaxBodyBytes: 64 << 10})
	conn, err := net.DialTimeout("tcp", ts.addr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	fmt.Fprintf(conn, "POST /api/v1/push HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", 100<<10)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "answered before the body arrived")
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, 401, resp.StatusCode)
	require.JSONEq(t, `{"error":"Authentication required"}`, string(body))

	rwTok := hsToken(t, testSecret, jwt.MapClaims{"role": "read-write"})
	small := `{"items":[{"queue":"q","payload":"` + strings.Repeat("x", 10<<10) + `"}]}`
	r := ts.doRaw("POST", "/api/v1/push", small, bearer(rwTok))
	require.Equal(t, 201, r.status, "%s", r.body)
}
