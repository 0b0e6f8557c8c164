package replica

import (
	"fmt"
	"io"
	"log"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/rs/zerolog"
)

// routineEvery is how often one routine failure line (a heartbeat, append or
// vote RPC to a peer that is down) is written per message and peer; the lines
// between are counted and the next one written says how many were dropped.
const routineEvery = 10 * time.Second

// routinePrefixes are raft's messages for RPCs to a peer that does not
// answer. raft logs them at ERROR for every retry (about 60 lines in 20 s for
// one node that is down), yet a down peer is what a cluster is built to
// survive: they are warnings here, rate-limited per peer.
var routinePrefixes = []string{
	"failed to heartbeat to",
	"failed to appendEntries to",
	"failed to make requestVote RPC",
	"failed to contact",
	"failed to send snapshot to",
}

// NewHCLogger returns an hclog.Logger that writes through z, so raft's,
// raft-wal's and the transport's lines have the format and the level of the
// rest of comb's log (issue 22: one log stream). A logger's name goes into the
// field "component" ("raft", "raft.transport"); raft's key-value arguments
// become fields. The level is z's: hclog's SetLevel is ignored, so one flag
// (--log-level) rules every line.
func NewHCLogger(z zerolog.Logger) hclog.Logger {
	return &hcLogger{z: z, name: "raft", limit: &routineLimiter{last: map[string]routineState{}}}
}

type hcLogger struct {
	z     zerolog.Logger
	name  string
	args  []interface{}
	limit *routineLimiter
}

type routineState struct {
	at      time.Time
	dropped int
}

// routineLimiter remembers, per routine message and peer, when it was last
// written and how many were dropped since.
type routineLimiter struct {
	mu   sync.Mutex
	last map[string]routineState
}

// admit reports whether a line with key may be written at now, and how many
// lines with that key were dropped before it.
func (r *routineLimiter) admit(key string, now time.Time) (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.last[key]
	if ok && now.Sub(s.at) < routineEvery {
		s.dropped++
		r.last[key] = s
		return false, 0
	}
	if len(r.last) > 1024 { // peers come and go; never grow without bound
		clear(r.last)
	}
	r.last[key] = routineState{at: now}
	return true, s.dropped
}

func routine(msg string) bool {
	for _, p := range routinePrefixes {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

func zlevel(l hclog.Level) zerolog.Level {
	switch l {
	case hclog.Trace:
		return zerolog.TraceLevel
	case hclog.Debug:
		return zerolog.DebugLevel
	case hclog.Info, hclog.NoLevel, hclog.DefaultLevel:
		return zerolog.InfoLevel
	case hclog.Warn:
		return zerolog.WarnLevel
	case hclog.Error:
		return zerolog.ErrorLevel
	case hclog.Off:
		return zerolog.Disabled
	}
	return zerolog.InfoLevel
}

func (h *hcLogger) Log(level hclog.Level, msg string, args ...interface{}) {
	zl := zlevel(level)
	dropped := 0
	if routine(msg) {
		if zl > zerolog.WarnLevel {
			zl = zerolog.WarnLevel
		}
		if h.z.GetLevel() > zl {
			return
		}
		ok, n := h.limit.admit(msg+"\x00"+peerOf(args), time.Now())
		if !ok {
			return
		}
		dropped = n
	}
	e := h.z.WithLevel(zl)
	if e == nil {
		return
	}
	e = e.Str("component", h.name)
	e = fields(e, h.args)
	e = fields(e, args)
	if dropped > 0 {
		e = e.Int("suppressed", dropped)
	}
	e.Msg(msg)
}

// peerOf is the peer a routine line is about: raft passes it as "peer" (a
// ServerAddress or Server), "server-id" or "id".
func peerOf(args []interface{}) string {
	for i := 0; i+1 < len(args); i += 2 {
		switch args[i] {
		case "peer", "server-id", "id", "target":
			return fmt.Sprint(args[i+1])
		}
	}
	return ""
}

// fields adds hclog's key-value pairs to e; a value with no key is kept
// under "extra", as hclog itself does.
func fields(e *zerolog.Event, args []interface{}) *zerolog.Event {
	for i := 0; i < len(args); i += 2 {
		if i+1 == len(args) {
			e = e.Interface("extra", args[i])
			break
		}
		key, ok := args[i].(string)
		if !ok {
			key = fmt.Sprint(args[i])
		}
		switch v := args[i+1].(type) {
		case hclog.Format:
			if len(v) > 0 {
				if f, ok := v[0].(string); ok {
					e = e.Str(key, fmt.Sprintf(f, v[1:]...))
					continue
				}
			}
			e = e.Str(key, fmt.Sprint(v...))
		case error:
			e = e.Str(key, v.Error())
		case string:
			e = e.Str(key, v)
		case time.Duration:
			e = e.Str(key, v.String())
		case fmt.Stringer:
			e = e.Str(key, v.String())
		case int, int64, uint64, uint32, int32, bool, float64:
			e = e.Interface(key, v)
		default:
			e = e.Str(key, fmt.Sprintf("%+v", v))
		}
	}
	return e
}

func (h *hcLogger) Trace(msg string, args ...interface{}) { h.Log(hclog.Trace, msg, args...) }
func (h *hcLogger) Debug(msg string, args ...interface{}) { h.Log(hclog.Debug, msg, args...) }
func (h *hcLogger) Info(msg string, args ...interface{})  { h.Log(hclog.Info, msg, args...) }
func (h *hcLogger) Warn(msg string, args ...interface{})  { h.Log(hclog.Warn, msg, args...) }
func (h *hcLogger) Error(msg string, args ...interface{}) { h.Log(hclog.Error, msg, args...) }

func (h *hcLogger) IsTrace() bool { return h.z.GetLevel() <= zerolog.TraceLevel }
func (h *hcLogger) IsDebug() bool { return h.z.GetLevel() <= zerolog.DebugLevel }
func (h *hcLogger) IsInfo() bool  { return h.z.GetLevel() <= zerolog.InfoLevel }
func (h *hcLogger) IsWarn() bool  { return h.z.GetLevel() <= zerolog.WarnLevel }
func (h *hcLogger) IsError() bool { return h.z.GetLevel() <= zerolog.ErrorLevel }

func (h *hcLogger) ImpliedArgs() []interface{} { return h.args }

func (h *hcLogger) With(args ...interface{}) hclog.Logger {
	c := *h
	c.args = append(append([]interface{}(nil), h.args...), args...)
	return &c
}

func (h *hcLogger) Name() string { return h.name }

func (h *hcLogger) Named(name string) hclog.Logger {
	c := *h
	if c.name == "" {
		c.name = name
	} else {
		c.name = h.name + "." + name
	}
	return &c
}

func (h *hcLogger) ResetNamed(name string) hclog.Logger {
	c := *h
	c.name = name
	return &c
}

// SetLevel is ignored: comb's --log-level rules raft's lines too.
func (h *hcLogger) SetLevel(hclog.Level) {}

func (h *hcLogger) GetLevel() hclog.Level {
	switch h.z.GetLevel() {
	case zerolog.TraceLevel:
		return hclog.Trace
	case zerolog.DebugLevel:
		return hclog.Debug
	case zerolog.InfoLevel:
		return hclog.Info
	case zerolog.WarnLevel:
		return hclog.Warn
	case zerolog.Disabled:
		return hclog.Off
	}
	return hclog.Error
}

func (h *hcLogger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(h.StandardWriter(opts), "", 0)
}

// StandardWriter writes each line given to it as one info line (the
// standard library's log package, for the few callers that want one).
func (h *hcLogger) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return stdWriter{h}
}

type stdWriter struct{ h *hcLogger }

func (w stdWriter) Write(p []byte) (int, error) {
	w.h.Log(hclog.Info, strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
