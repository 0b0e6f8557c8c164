package fsck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/datadir/datadirtest"
	"github.com/combmq/comb/record"
)

// TestMetaReaderMatchesBroker: the metadata journal the real broker writes is
// read back (meta.Read through datadir.ReadMeta) with every queue and
// partition name, and a check of it is clean.
func TestMetaReaderMatchesBroker(t *testing.T) {
	d := datadirtest.NewBrokerDir(t, "billing.invoices", 3, 4, 2)
	v, err := datadir.ReadMeta(d.Root)
	require.NoError(t, err)
	require.True(t, v.Present)
	assert.Equal(t, v.Bytes, v.ValidBytes)
	assert.Equal(t, record.TailClean, v.Tail)
	require.Len(t, v.Partitions, 3)
	for id, want := range d.Names {
		got, ok := v.Partitions[id]
		require.Truef(t, ok, "partition %s", datadir.IDString(id))
		assert.Equal(t, want.Name, got.Name)
		assert.Equal(t, "billing.invoices", got.Queue)
	}
	assert.Contains(t, mapValues(v.Queues), "billing.invoices")

	rep, err := Run(d.Root, Options{})
	require.NoError(t, err)
	assert.Equal(t, ExitClean, rep.ExitCode, "%v", kinds(rep))
	assert.Equal(t, 1, rep.Totals.Queues)
}

// TestMetaJournalDamage: a torn last record is repairable (cut, its bytes kept);
// damage with whole records after it, or a record that does not decode, is
// damage (exit 2: the server refuses to start with it) that a rebuild from the
// valid records and the descriptors repairs; a directory
// whose descriptor describes another one needs a person (issue 10).
func TestMetaJournalDamage(t *testing.T) {
	cases := []struct {
		name   string
		damage func(d *testDir)
		kind   Kind
		exit   int
		after  int
	}{
		{"a torn last record is a torn tail", func(d *testDir) {
			d.appendBytes(filepath.Join(d.root, dirMeta, metaJournalFile), []byte{40, 0, 0, 0, 1, 2, 3})
		}, KindJournalTornTail, ExitRepairable, ExitClean},
		{"a flipped bit before whole records is rebuilt", func(d *testDir) {
			d.flipBit(filepath.Join(d.root, dirMeta, metaJournalFile), 14)
		}, KindJournalCorrupt, ExitDamaged, ExitClean},
		{"a record that passes its checksum but does not decode is rebuilt", func(d *testDir) {
			d.appendMeta(99, d.queue, nil)
		}, KindJournalCorrupt, ExitDamaged, ExitClean},
		{"a removed journal is rebuilt from the descriptors", func(d *testDir) {
			require.NoError(t, os.Remove(filepath.Join(d.root, dirMeta, metaJournalFile)))
		}, KindJournalMissing, ExitRepairable, ExitClean},
		{"a directory whose descriptor describes another one needs a person", func(d *testDir) {
			require.NoError(t, os.Rename(d.partitionDir(d.firstID), d.partitionDir(uuid.Must(uuid.NewV7()))))
		}, KindOrphanPartition, ExitDamaged, ExitDamaged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestDir(t)
			d.writeLog(5, 2, 1<<20, ts0)
			d.writeLog(5, 2, 1<<20, ts0)
			tc.damage(d)
			rep := d.run(ModeCheck)
			assert.Contains(t, kinds(rep), tc.kind)
			assert.Equal(t, tc.exit, rep.ExitCode)
			d.run(ModeRepair)
			assert.Equal(t, tc.after, d.run(ModeCheck).ExitCode)
		})
	}
}

func mapValues(m map[[16]byte]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
