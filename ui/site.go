package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"
)

//go:embed static
var embedded embed.FS

// csp is the Content-Security-Policy of the embedded dashboard: its scripts and styles are
// files of its own (no inline script or style element, no CDN), and it talks only to the API of
// the server that served it. uPlot sets element styles from script (CSSOM), which CSP allows.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// Site serves one static tree with spec 8.10's rules (see the package comment). It is safe for
// concurrent use.
type Site struct {
	fsys fs.FS
	csp  string // "" for a user directory: its pages may need what the policy would refuse
	// packed holds the embedded files' ETags and gzipped bodies, computed once; nil for a
	// directory, whose files may change under a running server.
	packed map[string]packedFile
	root   *os.Root // the directory behind fsys; nil when embedded
}

// Embedded returns the dashboard built into the binary.
func Embedded() *Site {
	sub, err := fs.Sub(embedded, "static")
	if err != nil {
		panic("ui: the embedded tree has no static/: " + err.Error()) // a broken build, not input
	}
	s := &Site{fsys: sub, csp: csp, packed: map[string]packedFile{}}
	err = fs.WalkDir(sub, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, name)
		if err != nil {
			return err
		}
		s.packed[name] = pack(b)
		return nil
	})
	if err != nil {
		panic("ui: reading the embedded tree: " + err.Error())
	}
	return s
}

// packedFile is an embedded file's ETag (a quoted SHA-256 prefix) and its body gzipped, which
// is what a browser gets (the page and its scripts shrink to about a third).
type packedFile struct {
	etag string
	gz   []byte
}

func pack(b []byte) packedFile {
	sum := sha256.Sum256(b)
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // the level is valid
	_, _ = zw.Write(b)                                       // a bytes.Buffer does not fail
	_ = zw.Close()
	return packedFile{etag: `"` + hex.EncodeToString(sum[:8]) + `"`, gz: buf.Bytes()}
}

// Dir returns a Site over the directory dir (`comb serve --ui-dir`), which must hold an
// index.html. Files are read on each request, through an os.Root, so a request can reach
// nothing outside dir: not by "..", not by an encoded slash, not by a symbolic link pointing out.
// Close releases the directory.
func Dir(dir string) (*Site, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("ui directory %s: %w", dir, err)
	}
	fi, err := root.Stat("index.html")
	if err != nil || fi.IsDir() {
		root.Close()
		if err == nil {
			err = errors.New("is a directory")
		}
		return nil, fmt.Errorf("ui directory %s: index.html: %w", dir, err)
	}
	return &Site{fsys: root.FS(), root: root}, nil
}

// Close releases a directory's handle; it is a no-op for the embedded dashboard.
func (s *Site) Close() error {
	if s.root == nil {
		return nil
	}
	return s.root.Close()
}

// Claims reports whether the request (method, raw path) is the dashboard's: a GET or HEAD of any
// path but /api*, /health*, /metrics* (spec 8.10) and /streams/v1*. httpapi asks only for
// requests no API route matched.
func (s *Site) Claims(method, rawPath []byte) bool {
	m := string(method)
	return (m == fasthttp.MethodGet || m == fasthttp.MethodHead) && claimed(string(rawPath))
}

// Serve answers a claimed request: the file, the page (for `/` and the single-page fallback),
// or 404 {"error":"Not Found"} for a missing asset or a path that would leave the tree.
func (s *Site) Serve(ctx *fasthttp.RequestCtx) {
	raw := string(ctx.Request.URI().PathOriginal())
	name, ok := fsPath(raw)
	if !ok {
		notFound(ctx)
		return
	}
	switch {
	case name != "." && name != "index.html" && s.serveFile(ctx, name):
	case name == "assets" || strings.HasPrefix(name, "assets/"):
		notFound(ctx) // a missing asset is a 404, not the page parsed as a script
	case s.serveFile(ctx, "index.html"): // `/`, or the single-page fallback: the page routes itself
	default:
		notFound(ctx) // the directory lost its index.html while served
	}
}

// serveFile answers name when it is a regular file of the tree, and reports whether it did.
func (s *Site) serveFile(ctx *fasthttp.RequestCtx, name string) bool {
	f, err := s.fsys.Open(name)
	if err != nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return false
	}
	h := &ctx.Response.Header
	h.Set("X-Content-Type-Options", "nosniff")
	// The page and its modules change with the binary (or the directory) under the same names:
	// revalidate every time, which the ETag makes a 304 when nothing changed.
	h.Set(fasthttp.HeaderCacheControl, "no-cache")
	if s.csp != "" {
		h.Set("Content-Security-Policy", s.csp)
	}
	packed, isPacked := s.packed[name]
	etag := packed.etag
	if !isPacked {
		etag = `"` + strconv.FormatInt(fi.ModTime().UnixNano(), 36) + "-" + strconv.FormatInt(fi.Size(), 36) + `"`
	}
	h.Set(fasthttp.HeaderETag, etag)
	if string(ctx.Request.Header.Peek(fasthttp.HeaderIfNoneMatch)) == etag {
		f.Close()
		ctx.SetStatusCode(fasthttp.StatusNotModified)
		return true
	}
	h.SetContentType(contentType(name))
	ctx.SetStatusCode(fasthttp.StatusOK)
	if isPacked {
		h.Set(fasthttp.HeaderVary, "Accept-Encoding")
		if ctx.Request.Header.HasAcceptEncoding("gzip") {
			f.Close()
			h.Set(fasthttp.HeaderContentEncoding, "gzip")
			ctx.SetBody(packed.gz)
			return true
		}
	}
	// fasthttp closes f once the body is written (it is an io.Closer).
	ctx.SetBodyStream(f, int(fi.Size()))
	return true
}

// contentType is the type of a file by its extension; the usual web types are fixed here so
// that the answer does not depend on the machine's MIME tables.
func contentType(name string) string {
	switch ext := strings.ToLower(path.Ext(name)); ext {
	case ".html":
		return "text/html; charset=utf-8"
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".json", ".map":
		return "application/json"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	case ".ico":
		return "image/x-icon"
	case ".woff2":
		return "font/woff2"
	case ".txt", "":
		return "text/plain; charset=utf-8"
	default:
		if t := mime.TypeByExtension(ext); t != "" {
			return t
		}
		return "application/octet-stream"
	}
}

// notFound is the API's own 404 body (spec 0.1), so a client cannot tell a missing file from a
// missing route.
func notFound(ctx *fasthttp.RequestCtx) {
	ctx.Response.ResetBody()
	ctx.SetStatusCode(fasthttp.StatusNotFound)
	ctx.Response.Header.SetContentType("application/json")
	ctx.SetBodyString(`{"error":"Not Found"}`)
}
