package httpapi

import (
	"math"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/names"
)

// queueOption describes one option of spec 2.2: its JSON name and where it lives. Exactly one
// of intField and boolField is set. The table order is the order options are echoed in (2.4).
type queueOption struct {
	name      string
	intField  func(*broker.QueueOptions) *int64
	boolField func(*broker.QueueOptions) *bool
	// signed: negative values are meaningful (priority) or clamped by the spec (minPopWaitTime,
	// spec 2.2 "Clamp to 0..60000"); every other count, length or duration must be >= 0.
	signed bool
}

// maxOptionValue bounds numeric options: seconds times 10^6 (the broker's µs arithmetic) must
// not overflow int64. 10^12 s is over 31,000 years.
const maxOptionValue = 1_000_000_000_000

var queueOptions = []queueOption{
	{name: "priority", intField: func(o *broker.QueueOptions) *int64 { return &o.Priority }, signed: true},
	{name: "leaseTime", intField: func(o *broker.QueueOptions) *int64 { return &o.LeaseTime }},
	{name: "retryLimit", intField: func(o *broker.QueueOptions) *int64 { return &o.RetryLimit }},
	{name: "retryDelay", intField: func(o *broker.QueueOptions) *int64 { return &o.RetryDelay }},
	{name: "maxSize", intField: func(o *broker.QueueOptions) *int64 { return &o.MaxSize }},
	{name: "ttl", intField: func(o *broker.QueueOptions) *int64 { return &o.TTL }},
	{name: "deadLetterQueue", boolField: func(o *broker.QueueOptions) *bool { return &o.DeadLetterQueue }},
	{name: "dlqAfterMaxRetries", boolField: func(o *broker.QueueOptions) *bool { return &o.DLQAfterMaxRetries }},
	{name: "delayedProcessing", intField: func(o *broker.QueueOptions) *int64 { return &o.DelayedProcessing }},
	{name: "windowBuffer", intField: func(o *broker.QueueOptions) *int64 { return &o.WindowBuffer }},
	{name: "retentionSeconds", intField: func(o *broker.QueueOptions) *int64 { return &o.RetentionSeconds }},
	{name: "completedRetentionSeconds", intField: func(o *broker.QueueOptions) *int64 { return &o.CompletedRetentionSeconds }},
	{name: "retentionEnabled", boolField: func(o *broker.QueueOptions) *bool { return &o.RetentionEnabled }},
	{name: "encryptionEnabled", boolField: func(o *broker.QueueOptions) *bool { return &o.EncryptionEnabled }},
	{name: "maxWaitTimeSeconds", intField: func(o *broker.QueueOptions) *int64 { return &o.MaxWaitTimeSeconds }},
	{name: "minPopWaitTime", intField: func(o *broker.QueueOptions) *int64 { return &o.MinPopWaitTime }, signed: true},
}

var parserPool fastjson.ParserPool

// parseJSON parses body with a pooled fastjson parser; the caller must put the parser back
// (values alias it). A syntax error answers 400 "Invalid JSON: <detail>" (spec 0.1).
func parseJSON(ctx *fasthttp.RequestCtx, body string) (*fastjson.Parser, *fastjson.Value, bool) {
	p := parserPool.Get()
	v, err := p.Parse(body)
	if err != nil {
		parserPool.Put(p)
		badRequest(ctx, "Invalid JSON: "+err.Error())
		return nil, nil, false
	}
	return p, v, true
}

// decodeConfigureWarn parses and validates a configure body (spec 2.1, 2.2) and names the
// option keys it ignored (unknownOptionWarnings).
func decodeConfigureWarn(body []byte) (broker.ConfigureRequest, []string, string) {
	parser := parserPool.Get()
	defer parserPool.Put(parser)
	v, err := parser.Parse(b2s(body))
	if err != nil {
		return broker.ConfigureRequest{}, nil, "Invalid JSON: " + err.Error()
	}
	req, msg := parseConfigure(v)
	if msg != "" {
		return req, nil, msg
	}
	if ov := v.Get("options"); ov != nil && ov.Type() == fastjson.TypeObject {
		return req, unknownOptionWarnings(ov), ""
	}
	return req, nil, ""
}

// parseConfigure reads spec 2.1 into a request: a whole replace, every option not given takes
// its default (2.2). msg is the 400 message, "" when valid.
func parseConfigure(v *fastjson.Value) (req broker.ConfigureRequest, msg string) {
	qv := v.Get("queue")
	if qv == nil || qv.Type() != fastjson.TypeString {
		return req, "queue is required"
	}
	req.Queue = string(qv.GetStringBytes())
	if m := nameMsg(names.Queue, req.Queue); m != "" {
		return req, m
	}
	var ok bool
	if req.Namespace, ok = optionalString(v.Get("namespace")); !ok {
		return req, "namespace must be a string"
	}
	if req.Task, ok = optionalString(v.Get("task")); !ok {
		return req, "task must be a string"
	}
	if m := labelMsg(names.Namespace, req.Namespace); m != "" {
		return req, m
	}
	if m := labelMsg(names.Task, req.Task); m != "" {
		return req, m
	}
	req.Options = broker.DefaultQueueOptions()
	ov := v.Get("options")
	if ov == nil || ov.Type() != fastjson.TypeObject {
		return req, "" // spec 2.1: non-objects are ignored
	}
	for _, opt := range queueOptions {
		x := ov.Get(opt.name)
		if x == nil || x.Type() == fastjson.TypeNull {
			continue
		}
		if opt.intField != nil {
			n, ok := jsonInt(x)
			if !ok {
				return req, "Option " + opt.name + " must be an integer"
			}
			if n < 0 && !opt.signed {
				return req, "Option " + opt.name + " must not be negative"
			}
			if n > maxOptionValue || n < -maxOptionValue {
				return req, "Option " + opt.name + " must be at most 1000000000000 in magnitude"
			}
			*opt.intField(&req.Options) = n
			continue
		}
		b, ok := jsonBool(x)
		if !ok {
			return req, "Option " + opt.name + " must be a boolean"
		}
		*opt.boolField(&req.Options) = b
	}
	return req, ""
}

// optionalString reads a string-or-null field; absent and null are "" (spec 2.1). The result
// is a copy: the broker keeps it.
func optionalString(v *fastjson.Value) (string, bool) {
	if v == nil || v.Type() == fastjson.TypeNull {
		return "", true
	}
	if v.Type() != fastjson.TypeString {
		return "", false
	}
	return string(v.GetStringBytes()), true
}

// jsonInt accepts a JSON number with an integral value or a numeric string (spec 2.2: numeric
// strings work in Queen).
func jsonInt(v *fastjson.Value) (int64, bool) {
	var text string
	switch v.Type() {
	case fastjson.TypeNumber:
		text = string(v.MarshalTo(nil))
	case fastjson.TypeString:
		text = strings.TrimSpace(string(v.GetStringBytes()))
	default:
		return 0, false
	}
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
		return 0, false
	}
	return int64(f), true
}

// jsonBool accepts true/false, and the strings "true"/"false" for symmetry with numeric strings.
func jsonBool(v *fastjson.Value) (bool, bool) {
	switch v.Type() {
	case fastjson.TypeTrue:
		return true, true
	case fastjson.TypeFalse:
		return false, true
	case fastjson.TypeString:
		switch string(v.GetStringBytes()) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}

// configure serves POST /api/v1/configure (spec 2).
func (s *Server) configure(ctx *fasthttp.RequestCtx) {
	body, ok := requireBody(ctx)
	if !ok {
		return
	}
	req, warnings, msg := decodeConfigureWarn(body)
	if msg != "" {
		badRequest(ctx, msg)
		return
	}
	res, err := s.b.Configure(req)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	p := getBuf()
	*p = appendConfigureResult(*p, &res)
	if res.StoredPlain {
		warnings = append(warnings, WarningStoredPlain)
	}
	if len(warnings) > 0 {
		// Inside the top-level object: drop its closing brace, add the list, close again.
		*p = append(appendWarnings((*p)[:len(*p)-1], warnings), '}')
	}
	sendJSON(ctx, fasthttp.StatusOK, p)
}

// appendConfigureResult encodes spec 2.4: every option with its JSON type.
func appendConfigureResult(b []byte, r *broker.ConfigureResult) []byte {
	b = append(b, `{"configured":true,"queueId":`...)
	b = appendString(b, r.QueueID)
	b = append(b, `,"partitionId":`...)
	b = appendString(b, r.PartitionID)
	b = append(b, `,"queue":`...)
	b = appendString(b, r.Queue)
	b = append(b, `,"namespace":`...)
	b = appendString(b, r.Namespace)
	b = append(b, `,"task":`...)
	b = appendString(b, r.Task)
	b = append(b, `,"options":{`...)
	for i, opt := range queueOptions {
		b = appendKey(b, opt.name, i == 0)
		if opt.intField != nil {
			b = appendInt(b, *opt.intField(&r.Options))
		} else {
			b = appendBool(b, *opt.boolField(&r.Options))
		}
	}
	return append(b, '}', '}')
}
