package fsck

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
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
	st, err := Dump(d.root, DumpOptions{PartitionID: orphan.String(), Records: true, Payload: true}, &out)
	require.NoError(t, err)
	require.Equal(t, int64(10), int64(st.Records), "the hinted selection reads every record of the orphan")
	require.Equal(t, 10, strings.Count(out.String(), `"type":"record"`))
}
