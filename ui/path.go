package ui

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// claimed reports whether a GET of rawPath is the dashboard's rather than the API's (spec
// 8.10): everything except /api*, /health* and /metrics*, and /streams/v1*, the streams routes
// (spec 10), whose GET must be the API's 404 too, not the page with 200. Matching by prefix
// without a slash keeps /healthz and /metrics-foo away from the page too, as Queen's fallback
// does; a dashboard's own /streams page is still claimed.
func claimed(rawPath string) bool {
	for _, p := range []string{"/api", "/health", "/metrics", "/streams/v1"} {
		if strings.HasPrefix(rawPath, p) {
			return false
		}
	}
	return strings.HasPrefix(rawPath, "/")
}

// fsPath turns a raw (still percent-encoded) request path into a path of the tree in io/fs form
// ("assets/app.js"; "." for the root). Each segment is decoded on its own, so an encoded slash
// cannot join two segments into one name. ok is false for a segment that decodes to "." or "..",
// or holds '/', '\', NUL or invalid UTF-8 (io/fs refuses it), for an empty segment ("a//b", a
// trailing slash), and for a malformed escape: such a request gets a 404, never a file outside
// the tree.
func fsPath(rawPath string) (name string, ok bool) {
	if !strings.HasPrefix(rawPath, "/") {
		return "", false
	}
	rest := rawPath[1:]
	if rest == "" {
		return ".", true
	}
	segs := strings.Split(rest, "/")
	if segs[len(segs)-1] == "" { // "/assets/": a directory, served as nothing
		return "", false
	}
	for i, s := range segs {
		d, err := url.PathUnescape(s)
		if err != nil || d == "" || d == "." || d == ".." || strings.ContainsAny(d, "/\\\x00") || !utf8.ValidString(d) {
			return "", false
		}
		segs[i] = d
	}
	return strings.Join(segs, "/"), true
}
