package names

import (
	"strings"
	"unicode/utf8"
)

// MaxChars bounds names, labels and transactionIds, in characters (spec 0.4: 1..255).
const MaxChars = 255

// Kind says what a checked string names; its String is the word the error message starts with.
type Kind uint8

const (
	Queue Kind = iota
	Partition
	ConsumerGroup
	Namespace
	Task
	TransactionID
)

func (k Kind) String() string {
	switch k {
	case Queue:
		return "Queue"
	case Partition:
		return "Partition"
	case ConsumerGroup:
		return "Consumer group"
	case Namespace:
		return "namespace"
	case Task:
		return "task"
	case TransactionID:
		return "TransactionId"
	}
	return "Name"
}

// Problem says what is wrong with a refused string.
type Problem uint8

const (
	Empty   Problem = iota + 1 // a name of zero bytes
	BadUTF8                    // not valid UTF-8
	TooLong                    // more than MaxChars characters
	Slash                      // a '/' in a queue name (spec 0.4 forbids it there only)
	NUL                        // a NUL byte
	Dot                        // "." or ".."
)

// Error is the typed refusal of a name: which kind of name, and what is wrong with it. Its
// Error text is the 400 message comb answers (spec 11 #27 leaves the wording free; these are
// comb's since issue 4).
type Error struct {
	Kind    Kind
	Problem Problem
}

func (e *Error) Error() string {
	subject := e.Kind.String()
	if e.Kind <= ConsumerGroup {
		subject += " name"
	}
	switch e.Problem {
	case Empty:
		return subject + " must not be empty"
	case BadUTF8:
		return subject + " must be valid UTF-8"
	case TooLong:
		return subject + " must be at most 255 characters"
	case Slash:
		return subject + " must not contain '/'"
	case NUL:
		return subject + " must not contain NUL"
	case Dot:
		return subject + " must not be '.' or '..'"
	}
	return subject + " is not acceptable"
}

// Check returns nil when name is an acceptable queue, partition or consumer-group name (kind
// Queue, Partition or ConsumerGroup), else an *Error: it must be 1..255 characters of valid
// UTF-8 (so that two byte strings never name the same queue once a decoder replaces bad bytes
// with U+FFFD), hold no NUL, and not be "." or ".."; `/` is refused in queue names only (spec
// 0.4), since partition and group names never become paths and a `/` in a path parameter
// arrives percent-encoded inside its segment.
func Check(kind Kind, name string) error {
	var p Problem
	switch {
	case name == "":
		p = Empty
	case !utf8.ValidString(name):
		p = BadUTF8
	case tooLong(name):
		p = TooLong
	case kind == Queue && strings.IndexByte(name, '/') >= 0:
		p = Slash
	case strings.IndexByte(name, 0) >= 0:
		p = NUL
	case name == "." || name == "..":
		p = Dot
	default:
		return nil
	}
	return &Error{Kind: kind, Problem: p}
}

// CheckLabel returns nil when label is an acceptable namespace or task label (kind Namespace or
// Task), else an *Error. A label is optional ("" means unset, spec 2.1) and otherwise obeys the
// limits of names (spec 0.4): valid UTF-8, at most 255 characters, no NUL. `/`, `.` and `..`
// are fine: labels are only compared. Without the cap a 2 MiB namespace went into the metadata
// journal (issue 10).
func CheckLabel(kind Kind, label string) error {
	var p Problem
	switch {
	case label == "":
		return nil
	case !utf8.ValidString(label):
		p = BadUTF8
	case tooLong(label):
		p = TooLong
	case strings.IndexByte(label, 0) >= 0:
		p = NUL
	default:
		return nil
	}
	return &Error{Kind: kind, Problem: p}
}

// CheckTransactionID returns nil for an acceptable transactionId, else an *Error: at most 255
// characters (spec 0.4) and no NUL. An empty one is the caller's business (push generates one).
func CheckTransactionID(id string) error {
	switch {
	case tooLong(id):
		return &Error{Kind: TransactionID, Problem: TooLong}
	case strings.IndexByte(id, 0) >= 0:
		return &Error{Kind: TransactionID, Problem: NUL}
	}
	return nil
}

// tooLong reports more than MaxChars characters, counting runes only when the bytes exceed it.
func tooLong(s string) bool {
	return len(s) > MaxChars && utf8.RuneCountInString(s) > MaxChars
}
