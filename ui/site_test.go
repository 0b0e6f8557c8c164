package ui

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/valyala/fasthttp"
)

// get serves one request through s as httpapi would: only when the site claims it.
func get(t *testing.T, s *Site, method, uri string) (int, string, *fasthttp.ResponseHeader) {
	t.Helper()
	var ctx fasthttp.RequestCtx
	ctx.Request.Header.SetMethod(method)
	ctx.Request.SetRequestURI(uri)
	if !s.Claims(ctx.Method(), ctx.Request.URI().PathOriginal()) {
		return 0, "", nil
	}
	s.Serve(&ctx)
	body, err := ctx.Response.BodyUncompressed()
	require.NoError(t, err)
	if ctx.Response.IsBodyStream() {
		body = ctx.Response.Body()
	}
	return ctx.Response.StatusCode(), string(body), &ctx.Response.Header
}

// userDir lays out a --ui-dir tree beside a secret file it must never serve, with symbolic
// links that point out of it.
func userDir(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "site")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "assets"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "secret.txt"), []byte("SECRET"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "index.html"), []byte("<html>INDEX</html>"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "favicon.ico"), []byte("ICON"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "assets", "app.js"), []byte("APP"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(dir, "assets", "out.js")))
	require.NoError(t, os.Symlink(base, filepath.Join(dir, "up")))
	require.NoError(t, os.Symlink("app.js", filepath.Join(dir, "assets", "in.js")))
	return dir
}

// spec 8.10: GET /, /assets/* and a GET single-page fallback serve the dashboard build; the
// fallback must not swallow /api/*, /health*, /metrics* or /streams/v1/*.
func TestUserDirFollowsTheSPARules(t *testing.T) {
	s, err := Dir(userDir(t))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	cases := []struct {
		name, method, uri string
		status            int // 0: not claimed, the API's 404 stays
		body              string
	}{
		{"the page at /", "GET", "/", 200, "<html>INDEX</html>"},
		{"the page by name", "GET", "/index.html", 200, "<html>INDEX</html>"},
		{"an asset", "GET", "/assets/app.js", 200, "APP"},
		{"an asset with a query string", "GET", "/assets/app.js?v=3", 200, "APP"},
		{"a link inside the tree is followed", "GET", "/assets/in.js", 200, "APP"},
		{"a missing asset is 404, not the page", "GET", "/assets/nope.js", 404, `{"error":"Not Found"}`},
		{"a file at the root", "GET", "/favicon.ico", 200, "ICON"},
		{"a client route falls back to the page", "GET", "/queues/orders", 200, "<html>INDEX</html>"},
		{"HEAD is claimed like GET (fasthttp drops the body on the wire)", "HEAD", "/queues", 200, "<html>INDEX</html>"},
		{"POST is never the page", "POST", "/queues", 0, ""},
		{"/api/* keeps its 404", "GET", "/api/v1/no-such-route", 0, ""},
		{"/api itself", "GET", "/api", 0, ""},
		{"/health*", "GET", "/healthz", 0, ""},
		{"/metrics*", "GET", "/metrics/other", 0, ""},
		{"a streams route's GET keeps its 404", "GET", "/streams/v1/cycle", 0, ""},
		{"a dashboard's own /streams page is the page", "GET", "/streams", 200, "<html>INDEX</html>"},
		{"dot-dot", "GET", "/../secret.txt", 404, `{"error":"Not Found"}`},
		{"dot-dot inside assets", "GET", "/assets/../../secret.txt", 404, `{"error":"Not Found"}`},
		{"encoded dot-dot", "GET", "/assets/%2e%2e/%2E%2E/secret.txt", 404, `{"error":"Not Found"}`},
		{"encoded slash", "GET", "/..%2fsecret.txt", 404, `{"error":"Not Found"}`},
		{"encoded slash in assets", "GET", "/assets/..%2F..%2Fsecret.txt", 404, `{"error":"Not Found"}`},
		{"encoded backslash", "GET", "/assets/..%5c..%5csecret.txt", 404, `{"error":"Not Found"}`},
		{"NUL", "GET", "/assets/app.js%00", 404, `{"error":"Not Found"}`},
		{"bad escape", "GET", "/assets/%zz", 404, `{"error":"Not Found"}`},
		{"a symlink to a file outside", "GET", "/assets/out.js", 404, `{"error":"Not Found"}`},
		{"through a symlink to a directory outside", "GET", "/up/secret.txt", 200, "<html>INDEX</html>"},
		{"a directory is not listed", "GET", "/assets", 404, `{"error":"Not Found"}`},
		{"a directory with a slash", "GET", "/assets/", 404, `{"error":"Not Found"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body, _ := get(t, s, c.method, c.uri)
			require.Equal(t, c.status, status)
			require.Equal(t, c.body, body)
			require.NotContains(t, body, "SECRET")
		})
	}
}

// An index.html removed (or replaced by a directory) under a running server: 404, not an empty
// 200.
func TestUserDirLosingItsIndex(t *testing.T) {
	dir := userDir(t)
	s, err := Dir(dir)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	require.NoError(t, os.Remove(filepath.Join(dir, "index.html")))
	status, _, _ := get(t, s, "GET", "/queues")
	require.Equal(t, 404, status)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "index.html"), 0o755))
	status, _, _ = get(t, s, "GET", "/")
	require.Equal(t, 404, status)
}

func TestDirRefusesATreeWithoutAnIndex(t *testing.T) {
	_, err := Dir(t.TempDir())
	require.ErrorContains(t, err, "index.html")
	_, err = Dir(filepath.Join(t.TempDir(), "missing"))
	require.Error(t, err)
}

// The embedded dashboard: the page, its modules and the vendored chart library with its licence,
// typed for a browser that enforces the types (nosniff, module scripts) and under a CSP that
// allows no inline script.
func TestEmbeddedDashboard(t *testing.T) {
	s := Embedded()
	status, body, h := get(t, s, "GET", "/")
	require.Equal(t, 200, status)
	require.Contains(t, body, `<script type="module" src="/assets/app.js"></script>`)
	require.Equal(t, "text/html; charset=utf-8", string(h.ContentType()))
	require.Contains(t, string(h.Peek("Content-Security-Policy")), "script-src 'self';")
	require.Equal(t, "nosniff", string(h.Peek("X-Content-Type-Options")))
	etag := string(h.Peek(fasthttp.HeaderETag))
	require.NotEmpty(t, etag)

	for uri, typ := range map[string]string{
		"/assets/app.js":                         "text/javascript; charset=utf-8",
		"/assets/views/overview.js":              "text/javascript; charset=utf-8",
		"/assets/style.css":                      "text/css; charset=utf-8",
		"/assets/vendor/uplot/uPlot.iife.min.js": "text/javascript; charset=utf-8",
		"/assets/vendor/uplot/uPlot.min.css":     "text/css; charset=utf-8",
		"/assets/vendor/uplot/LICENSE":           "text/plain; charset=utf-8",
		"/assets/favicon.svg":                    "image/svg+xml",
	} {
		status, body, h := get(t, s, "GET", uri)
		require.Equal(t, 200, status, uri)
		require.NotEmpty(t, body, uri)
		require.Equal(t, typ, string(h.ContentType()), uri)
	}
	_, lic, _ := get(t, s, "GET", "/assets/vendor/uplot/LICENSE")
	require.Contains(t, lic, "The MIT License")

	// A browser gets the bytes gzipped (Accept-Encoding), the same bytes once inflated.
	var gz fasthttp.RequestCtx
	gz.Request.SetRequestURI("/assets/vendor/uplot/uPlot.iife.min.js")
	gz.Request.Header.Set(fasthttp.HeaderAcceptEncoding, "gzip, deflate, br")
	s.Serve(&gz)
	require.Equal(t, "gzip", string(gz.Response.Header.ContentEncoding()))
	inflated, err := gz.Response.BodyGunzip()
	require.NoError(t, err)
	_, plain, _ := get(t, s, "GET", "/assets/vendor/uplot/uPlot.iife.min.js")
	require.Equal(t, plain, string(inflated))
	require.Less(t, len(gz.Response.Body()), len(plain)/2)

	var ctx fasthttp.RequestCtx
	ctx.Request.SetRequestURI("/")
	ctx.Request.Header.Set(fasthttp.HeaderIfNoneMatch, etag)
	s.Serve(&ctx)
	require.Equal(t, fasthttp.StatusNotModified, ctx.Response.StatusCode(), "an unchanged page is revalidated, not resent")
}

// fsPath is the decoder between the wire and the file tree: whatever the input, its answer is
// a valid io/fs path with no "..", or a refusal.
func FuzzFsPath(f *testing.F) {
	for _, s := range []string{"/", "/assets/app.js", "/..", "/a/%2e%2e/b", "/a%2fb", "/%00", "//", "/a//b", "/%", "/%80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		name, ok := fsPath(raw)
		if !ok {
			return
		}
		require.Truef(t, fs.ValidPath(name), "fsPath(%q) = %q", raw, name)
		require.Falsef(t, strings.ContainsAny(name, "\\\x00"), "fsPath(%q) = %q", raw, name)
	})
}
