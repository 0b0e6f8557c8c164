package layout

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The names are part of the on-disk format (docs/format.md section 1): a change here is a format
// change, so the test spells each name out.
func TestPathsAreTheFormatsNames(t *testing.T) {
	assert.Equal(t, []string{"LOCK", "meta", "cursor", "partitions", "dlq", "quarantine", "commitlog", "notes", "raft", "small", "summaries", "clean"},
		[]string{Lock, Meta, Cursor, Partitions, DLQ, Quarantine, CommitLog, Notes, Raft, Small, Summaries, Clean})
}
