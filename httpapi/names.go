package httpapi

import (
	"strings"

	"github.com/google/uuid"
)

// maxNameBytes bounds queue, partition and consumer-group names and transactionIds
// (spec 0.4: 1..255; spec 11 #27: longer is a 400).
const maxNameBytes = 255

// checkName returns the 400 message for a queue, partition or consumer-group name that the
// broker must never see, or "" when the name is acceptable. kind is "Queue", "Partition" or
// "Consumer group". Names never become file paths in comb (contracts.md: partition directories
// are named by UUID), but `/`, `.`/`..` and NUL are refused anyway so no name can be mistaken
// for a path by any tool that prints or exports them (issue 4, "Bad input"; spec 0.4: any
// non-empty string without `/`).
func checkName(kind, name string) string {
	switch {
	case name == "":
		return kind + " name must not be empty"
	case len(name) > maxNameBytes:
		return kind + " name must be at most 255 bytes"
	case strings.IndexByte(name, '/') >= 0:
		return kind + " name must not contain '/'"
	case strings.IndexByte(name, 0) >= 0:
		return kind + " name must not contain NUL"
	case name == "." || name == "..":
		return kind + " name must not be '.' or '..'"
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

// checkTransactionID returns the 400 message for an over-long or NUL-carrying transactionId.
func checkTransactionID(id string) string {
	if len(id) > maxNameBytes {
		return "TransactionId must be at most 255 bytes"
	}
	if strings.IndexByte(id, 0) >= 0 {
		return "TransactionId must not contain NUL"
	}
	return ""
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
