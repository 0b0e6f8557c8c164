package httpapi

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/combmq/comb/names"
	"github.com/google/uuid"
)

// maxNameChars bounds names and other client strings, in characters (spec 0.4: 1..255).
const maxNameChars = names.MaxChars

// nameMsg returns the 400 message for a queue, partition or consumer-group name that the broker
// must never see, or "" when names.Check accepts it (spec 0.4, 11 #27; the rule is in names).
func nameMsg(kind names.Kind, name string) string { return errText(names.Check(kind, name)) }

// labelMsg returns the 400 message for a queue's namespace or task label, "" when
// names.CheckLabel accepts it ("" is unset, spec 2.1).
func labelMsg(kind names.Kind, label string) string { return errText(names.CheckLabel(kind, label)) }

// checkGroup is nameMsg for an optional consumer group: "" means __QUEUE_MODE__ (spec 11 #29).
func checkGroup(group string) string {
	if group == "" {
		return ""
	}
	return nameMsg(names.ConsumerGroup, group)
}

// checkTransactionID returns the 400 message for an over-long (in characters, spec 0.4) or
// NUL-carrying transactionId.
func checkTransactionID(id string) string { return errText(names.CheckTransactionID(id)) }

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// checkNotReplaced returns the 400 message for a name a JSON decoder produced by replacing
// invalid UTF-8 or a lone surrogate escape (`\ud800`) with U+FFFD: names.Check can no longer see
// the bad bytes, but the name holds a U+FFFD that the body never spelled out (neither as UTF-8
// nor as `\ufffd`). Only names holding U+FFFD pay for the look at the body.
func checkNotReplaced(kind, name string, body []byte) string {
	if !strings.ContainsRune(name, utf8.RuneError) {
		return ""
	}
	if bytes.Contains(body, []byte("\uFFFD")) || bytes.Contains(bytes.ToLower(body), []byte(`\ufffd`)) {
		return ""
	}
	return kind + " name must be valid UTF-8"
}

// checkTraceID: a traceId that is not a UUID rejects the whole push (spec 1.2, 11 #26).
func checkTraceID(id string) string {
	if id == "" {
		return ""
	}
	if len(id) != 36 || uuid.Validate(id) != nil {
		return "TraceId must be a UUID"
	}
	return ""
}
