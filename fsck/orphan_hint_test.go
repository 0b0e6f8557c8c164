package fsck

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/dump"
)

// Issue 10: the orphan-partition finding named `comb dump --log`, which does not exist. Its hint
// is now a dump selection that exists and reads that directory's records.
func TestOrphanPartitionHintNamesADumpThatReadsIt(t *testing.T) {
	d := newTestDir(t)
	d.writeLog(5, 2, 1<<20, ts0)
	orphan := uuid.Must(uuid.NewV7())
	require.NoError(t, os.Rename(d.partitionDir(d.firstID), d.partitionDir(orphan)))

	var detail string
	for _, f := range d.run(ModeCheck).Findings {
		if f.Kind == KindOrphanPartition {
			detail = f.Detail
		}
	}
	want := "`comb dump --partition-id " + orphan.String() + " --payload DATA-DIR`"
	require.Contains(t, detail, want)

	var out bytes.Buffer
	st, err := dump.Run(d.root, dump.Options{PartitionID: orphan.String(), Records: true, Payload: true}, &out)
	require.NoError(t, err)
	require.Equal(t, int64(10), int64(st.Records), "the hinted selection reads every record of the orphan")
	require.Equal(t, 10, strings.Count(out.String(), `"type":"record"`))
}

// Issue 15: on a node of a replicated cluster (<data>/raft exists) a partition directory the
// metadata snapshot does not name is a creation after it, which the node's start removes and
// raft creates again: information, not damage nor a repair.
func TestOrphanPartitionOfAReplicatedNodeIsInformation(t *testing.T) {
	d := newTestDir(t)
	d.writeLog(5, 2, 1<<20, ts0)
	orphan := uuid.Must(uuid.NewV7())
	require.NoError(t, os.Rename(d.partitionDir(d.firstID), d.partitionDir(orphan)))
	require.NoError(t, os.Mkdir(filepath.Join(d.root, "raft"), 0o700))

	rep := d.run(ModeCheck)
	var found *Finding
	for i, f := range rep.Findings {
		if f.Kind == KindOrphanPartition {
			found = &rep.Findings[i]
		}
	}
	require.NotNil(t, found)
	require.Equal(t, SeverityInfo, found.Severity)
	require.Contains(t, found.Detail, "raft creates it again")
	require.Equal(t, ExitClean, rep.ExitCode, "%v", kinds(rep))
}
