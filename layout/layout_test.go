package layout

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The names are part of the on-disk format (docs/format.md section 1): a change here is a format
// change, so the test spells each path out.
func TestPathsAreTheFormatsNames(t *testing.T) {
	assert.Equal(t, "/d/partitions/0190c3a0-0000-7000-8000-000000000001", PartitionDir("/d", "0190c3a0-0000-7000-8000-000000000001"))
	assert.Equal(t, "/d/dlq/q", DLQDir("/d", "q"))
	assert.Equal(t, "/d/meta/summaries", MetaFile("/d", Summaries))
	assert.Equal(t, "/d/meta/clean", MetaFile("/d", Clean))
	assert.Equal(t, "/d/quarantine/commitlog", QuarantineDir("/d", CommitLog))
	assert.Equal(t, []string{"LOCK", "meta", "cursor", "partitions", "dlq", "quarantine", "commitlog", "notes", "raft"},
		[]string{Lock, Meta, Cursor, Partitions, DLQ, Quarantine, CommitLog, Notes, Raft})
}
