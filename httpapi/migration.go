package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"time"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/queenimport"
)

// Migrator runs an import from a Queen database inside the server (*queenimport.Jobs): the
// /api/v1/migration/* routes of Queen's dashboard Migration view, and comb's own cutover and
// stop for `comb import --target` (issue 24). Config.Migration nil answers them 501.
type Migrator interface {
	Start(req queenimport.JobRequest) (queenimport.JobStatus, error)
	Status() queenimport.JobStatus
	Cutover() (queenimport.JobStatus, error)
	Stop() (queenimport.JobStatus, error)
	Reset() error
	Validate(ctx context.Context, url string) (queenimport.Validation, error)
	TestConnection(ctx context.Context, url string) (string, error)
}

// migrationBody is a migration request: Queen's form (host, port, database, user, password,
// ssl: here the Queen database to import from) or comb's (url), with comb's follow options.
type migrationBody struct {
	Host       string          `json:"host"`
	Port       json.RawMessage `json:"port"` // Queen's dashboard sends a string; a number is taken too
	Database   string          `json:"database"`
	User       string          `json:"user"`
	Password   string          `json:"password"`
	SSL        bool            `json:"ssl"`
	URL        string          `json:"url"`
	Follow     bool            `json:"follow"`
	OverlapMs  int64           `json:"overlapMs"`
	IntervalMs int64           `json:"intervalMs"`
}

// pgURL is the body's database as a postgres:// URL, or a message for a 400.
func (m *migrationBody) pgURL() (string, string) {
	if m.URL != "" {
		u, err := url.Parse(m.URL)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return "", "url must be a postgres:// URL"
		}
		return m.URL, ""
	}
	if m.Host == "" || m.Database == "" || m.User == "" {
		return "", "host, database, and user are required (or url)"
	}
	port := "5432"
	if p := bytes.Trim(m.Port, `"`); len(p) > 0 && string(p) != "null" {
		n, err := strconv.Atoi(string(p))
		if err != nil || n <= 0 || n > 65535 {
			return "", "port must be a TCP port number"
		}
		port = strconv.Itoa(n)
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword(m.User, m.Password), Host: m.Host + ":" + port, Path: "/" + m.Database}
	q := url.Values{"sslmode": {"disable"}, "connect_timeout": {"10"}}
	if m.SSL {
		q.Set("sslmode", "require")
	}
	u.RawQuery = q.Encode()
	return u.String(), ""
}

// migration serves /api/v1/migration/:op (admin when JWT auth is on, as Queen's are): Queen's
// test-connection, validate, start, status (GET) and reset, and comb's cutover and stop.
// Shapes: Queen's server/src/routes/migration.cpp; docs/operations.md, "A live move".
func (s *Server) migration(ctx *fasthttp.RequestCtx, op string, post bool) {
	m := s.cfg.Migration
	if m == nil {
		notSupported(ctx)
		return
	}
	if !post {
		if op != "status" {
			notFound(ctx)
			return
		}
		s.sendValue(ctx, fasthttp.StatusOK, m.Status())
		return
	}
	switch op {
	case "reset":
		if err := m.Reset(); err != nil {
			writeError(ctx, fasthttp.StatusConflict, "Cannot reset while migration is in progress")
			return
		}
		s.sendValue(ctx, fasthttp.StatusOK, map[string]string{"status": "idle", "message": "Migration state reset"})
		return
	case "cutover", "stop":
		var st queenimport.JobStatus
		var err error
		if op == "cutover" {
			st, err = m.Cutover()
		} else {
			st, err = m.Stop()
		}
		if err != nil {
			writeError(ctx, fasthttp.StatusConflict, err.Error())
			return
		}
		s.sendValue(ctx, fasthttp.StatusAccepted, st)
		return
	case "test-connection", "validate", "start":
	default:
		notFound(ctx)
		return
	}
	var body migrationBody
	if raw := ctx.PostBody(); len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			badRequest(ctx, "Invalid JSON body: "+err.Error())
			return
		}
	}
	pg, msg := body.pgURL()
	if msg != "" {
		badRequest(ctx, msg)
		return
	}
	switch op {
	case "test-connection":
		c, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		v, err := m.TestConnection(c, pg)
		if err != nil {
			s.sendValue(ctx, fasthttp.StatusOK, map[string]any{"success": false, "message": "Connection failed", "error": err.Error()})
			return
		}
		s.sendValue(ctx, fasthttp.StatusOK, map[string]any{"success": true, "message": "Connection successful", "version": v})
	case "validate":
		v, err := m.Validate(context.Background(), pg)
		if err != nil {
			s.sendValue(ctx, fasthttp.StatusInternalServerError, map[string]any{"success": false, "error": fmt.Sprintf("Failed to compare with the source: %v", err)})
			return
		}
		s.sendValue(ctx, fasthttp.StatusOK, v)
	case "start":
		if body.OverlapMs < 0 || body.IntervalMs < 0 {
			badRequest(ctx, "overlapMs and intervalMs must not be negative")
			return
		}
		st, err := m.Start(queenimport.JobRequest{URL: pg, Follow: body.Follow, FollowOptions: queenimport.FollowOptions{
			Overlap: time.Duration(body.OverlapMs) * time.Millisecond, Interval: time.Duration(body.IntervalMs) * time.Millisecond}})
		if errors.Is(err, queenimport.ErrJobRunning) {
			writeError(ctx, fasthttp.StatusConflict, "Migration already in progress")
			return
		}
		if err != nil {
			s.fail(ctx, err)
			return
		}
		s.sendValue(ctx, fasthttp.StatusAccepted, map[string]any{"status": "started",
			"message": "Migration started. Poll /api/v1/migration/status for progress.", "job": st})
	}
}
