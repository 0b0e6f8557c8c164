package httpapi

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
)

// maxNameChars bounds queue, partition and consumer-group names and transactionIds, in
// characters (spec 0.4: 1..255 chars; spec 11 #27: longer is a 400).
const maxNameChars = 255

// checkName returns the 400 message for a queue, partition or consumer-group name that the
// broker must never see, or "" when the name is acceptable. kind is "Queue", "Partition" or
// "Consumer group". Spec 0.4 forbids `/` in queue names only; partition and group names may
// hold it (they never become paths: partition directories are named by UUID, and a `/` in a
// path parameter arrives percent-encoded inside its segment). Every kind must be valid UTF-8 (so
// that two byte strings never name the same queue once a decoder replaces bad bytes with
// U+FFFD), at most 255 characters, without NUL, and not `.` or `..`.
func checkName(kind, name string) string {
	switch {
	case name == "":
		return kind + " name must not be empty"
	case !utf8.ValidString(name):
		return kind + " name must be valid UTF-8"
	case len(name) > maxNameChars && utf8.RuneCountInString(name) > maxNameChars:
		return kind + " name must be at most 255 characters"
	case kind == "Queue" && strings.IndexByte(name, '/') >= 0:
		return kind + " name must not contain '/'"
	case strings.IndexByte(name, 0) >= 0:
		return kind + " name must not contain NUL"
	case name == "." || name == "..":
		return kind + " name must not be '.' or '..'"
	}
	return ""
}

// checkLabel returns the 400 message for a queue's namespace or task label (kind "namespace" or
// "task"), "" when acceptable. A label is optional ("" means unset, spec 2.1) and otherwise
// obeys the limits of names (spec 0.4): valid UTF-8, at most 255 characters, no NUL. `/`, `.`
// and `..` are fine: labels are only compared, never used as names. Without the cap a 2 MiB
// namespace went into the metadata journal (issue 10).
func checkLabel(kind, label string) string {
	switch {
	case label == "":
		return ""
	case !utf8.ValidString(label):
		return kind + " must be valid UTF-8"
	case len(label) > maxNameChars && utf8.RuneCountInString(label) > maxNameChars:
		return kind + " must be at most 255 characters"
	case strings.IndexByte(label, 0) >= 0:
		return kind + " must not contain NUL"
	}
	return ""
}

// checkGroup is checkName for an optional consumer group: "" means __QUEUE_MODE__ (spec 11 #29).
func checkGroup(group string) string {
	if group == "" {
		return ""
	}
	return checkName("Consumer group", group)
}

// checkTransactionID returns the 400 message for an over-long (in characters, spec 0.4) or
// NUL-carrying transactionId.
func checkTransactionID(id string) string {
	if len(id) > maxNameChars && utf8.RuneCountInString(id) > maxNameChars {
		return "TransactionId must be at most 255 characters"
	}
	if strings.IndexByte(id, 0) >= 0 {
		return "TransactionId must not contain NUL"
	}
	return ""
}

// checkNotReplaced returns the 400 message for a name a JSON decoder produced by replacing
// invalid UTF-8 or a lone surrogate escape (`\ud800`) with U+FFFD: checkName can no longer see
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
