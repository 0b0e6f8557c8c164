package httpapi

import (
	"strconv"
	"strings"

	"github.com/combmq/comb/names"

	"github.com/valyala/fastjson"
)

// Configure ignores option names it does not know (spec 2.2, as Queen does), and Queen's JS and
// Python clients send whatever keys the application put in its options object (QueueBuilder
// config() merges them over the defaults; the Python client camel-cases every key), so a 400
// would break applications that work against Queen. A typo such as leaseTimeout for leaseTime
// then silently kept the default (issue 25): the answer now carries a warnings list naming each
// ignored key and the option it was probably meant to be.

// WarningStoredPlain is configure's warning for a queue with encryptionEnabled on a server
// without QUEEN_ENCRYPTION_KEY (spec 9.2 stores its payloads in plaintext). `comb replay` reads
// it to refuse carrying an encrypted queue into plaintext (issue 25).
const WarningStoredPlain = "encryptionEnabled: this server has no QUEEN_ENCRYPTION_KEY, so the queue's payloads are stored in plaintext"

// maxOptionWarnings bounds the warnings of one answer (an options object can be large).
const maxOptionWarnings = 16

// unknownOptionWarnings lists, in the body's order, one warning for each key of the options
// object that is not an option of spec 2.2; nil when there is none.
func unknownOptionWarnings(ov *fastjson.Value) []string {
	obj, err := ov.Object()
	if err != nil {
		return nil
	}
	var out []string
	obj.Visit(func(k []byte, _ *fastjson.Value) {
		name := string(k)
		if len(out) >= maxOptionWarnings || isQueueOption(name) {
			return
		}
		w := "unknown option " + strconv.Quote(name) + " ignored"
		if near := nearestOption(name); near != "" {
			w += " (did you mean " + strconv.Quote(near) + "?)"
		}
		out = append(out, w)
	})
	return out
}

func isQueueOption(name string) bool {
	for _, o := range queueOptions {
		if o.name == name {
			return true
		}
	}
	return false
}

// nearestOption is the option name a mistyped one most likely meant: the same letters in other
// case or with underscores (lease_time), else the closest by edit distance (at most a quarter of its letters), else
// "".
func nearestOption(name string) string {
	fold := strings.ToLower(strings.ReplaceAll(name, "_", ""))
	// A quarter of the name's letters may differ (leaseTimeout for leaseTime), at least one:
	// "dlq" is not "ttl".
	best, bestD := "", max(1, len(fold)/4)+1
	for _, o := range queueOptions {
		cand := strings.ToLower(o.name)
		if cand == fold {
			return o.name
		}
		if d := names.Distance(fold, cand); d < bestD {
			best, bestD = o.name, d
		}
	}
	return best
}

// appendWarnings appends `,"warnings":[...]` to an answer being built, nothing when ws is
// empty (the answer keeps Queen's exact shape).
func appendWarnings(b []byte, ws []string) []byte {
	if len(ws) == 0 {
		return b
	}
	b = append(b, `,"warnings":[`...)
	for i, w := range ws {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, w)
	}
	return append(b, ']')
}
