package httpapi

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/auth"
)

// fakeStatic claims what the ui package claims (GET of anything but /api*, /health*, /metrics*)
// and answers with the path, so the test sees which requests reached it.
type fakeStatic struct{}

func (fakeStatic) Claims(method, rawPath []byte) bool {
	p := string(rawPath)
	return string(method) == "GET" && !strings.HasPrefix(p, "/api") && !strings.HasPrefix(p, "/health") && !strings.HasPrefix(p, "/metrics")
}

func (fakeStatic) Serve(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("text/html; charset=utf-8")
	ctx.SetBodyString("PAGE " + string(ctx.Path()))
}

// spec 8.10 and 9.1: the dashboard's files are served without a token (the default
// JWT_SKIP_PATHS opens "/" only, matched exactly, so /assets/* and the fallback need the route
// to be public), while the API keeps its 401 and its 404, and no file can shadow a route.
func TestDashboardFilesArePublicAndNeverShadowTheAPI(t *testing.T) {
	a, err := auth.New(auth.Config{Enabled: true, Algorithm: auth.HS256, Secret: testSecret}, zerolog.Nop())
	require.NoError(t, err)
	ts := startServer(t, newFake(), Config{Auth: a, Static: fakeStatic{}})
	admin := bearer(hsToken(t, testSecret, map[string]any{"sub": "op", "role": "admin"}))
	cases := []struct {
		name, method, path string
		headers            map[string]string
		status             int
		body               string // prefix
	}{
		{"the page without a token", "GET", "/", nil, 200, "PAGE /"},
		{"an asset without a token", "GET", "/assets/app.js", nil, 200, "PAGE /assets/app.js"},
		{"a client route without a token", "GET", "/queues/orders", nil, 200, "PAGE /queues/orders"},
		{"an API route still needs a token", "GET", "/api/v1/resources/overview", nil, 401, `{"error":"Authentication required"}`},
		{"an unknown API route is not the page", "GET", "/api/v1/no-such-route", admin, 404, `{"error":"Not Found"}`},
		{"a POST is not the page", "POST", "/queues", admin, 404, `{"error":"Not Found"}`},
		{"health stays the API's", "GET", "/health", nil, 200, `{"status":`},
		{"/healthz is not the page", "GET", "/healthz", admin, 404, `{"error":"Not Found"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.doRaw(c.method, c.path, "", c.headers)
			require.Equal(t, c.status, r.status, "%s", r.body)
			require.True(t, strings.HasPrefix(string(r.body), c.body), "%s", r.body)
		})
	}
}

// Without a Static (a Server built by a test or another program), / is 404 as before.
func TestNoStaticLeavesTheRootNotFound(t *testing.T) {
	ts := startServer(t, newFake(), Config{})
	r := ts.do("GET", "/", "")
	require.Equal(t, 404, r.status)
}
