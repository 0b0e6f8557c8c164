package broker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleMetaRecords() []metaRecord {
	opts := DefaultQueueOptions()
	opts.Priority = 7
	opts.MinPopWaitTime = 250
	opts.RetentionEnabled = true
	opts.DLQAfterMaxRetries = true
	return []metaRecord{
		{Kind: metaQueuePut, ID: [16]byte{1}, CreatedAt: 1700000000000000, Name: "billing.invoices", Namespace: "billing", Task: "invoices", Opts: opts},
		{Kind: metaPartitionCreate, ID: [16]byte{2}, QueueID: [16]byte{1}, CreatedAt: 1700000000000001, Name: "Default"},
		{Kind: metaPartitionCreate, ID: [16]byte{3}, QueueID: [16]byte{1}, CreatedAt: 1700000000000002, Name: "cust-42 ünïcode"},
		{Kind: metaQueueDelete, ID: [16]byte{1}},
	}
}

func TestMetaRecordRoundTrip(t *testing.T) {
	for _, r := range sampleMetaRecords() {
		got, err := decodeMetaRecord(r.encode(nil))
		require.NoError(t, err)
		if r.Kind != metaQueuePut {
			r.Opts = QueueOptions{}
		}
		assert.Equal(t, r, got)
	}
}

func TestMetaJournalReplaysWhatWasAppended(t *testing.T) {
	dir := t.TempDir()
	j, rep, err := openMetaJournal(dir, true)
	require.NoError(t, err)
	require.Empty(t, rep.Records)
	recs := sampleMetaRecords()
	require.NoError(t, j.append(recs[:2]...))
	require.NoError(t, j.append(recs[2:]...))
	require.NoError(t, j.close())

	j, rep, err = openMetaJournal(dir, true)
	require.NoError(t, err)
	defer j.close()
	assert.Len(t, rep.Records, 4)
	assert.Zero(t, rep.TruncatedBytes)
	assert.Equal(t, "cust-42 ünïcode", rep.Records[2].Name)
}

// A crash can stop the journal at any byte: replay keeps every whole record
// before the cut and truncates the torn rest, so the next append lands on a
// record boundary.
func TestMetaJournalTornTailAtEveryByte(t *testing.T) {
	src := t.TempDir()
	j, _, err := openMetaJournal(src, true)
	require.NoError(t, err)
	recs := sampleMetaRecords()
	var ends []int64
	for _, r := range recs {
		require.NoError(t, j.append(r))
		ends = append(ends, j.size)
	}
	require.NoError(t, j.close())
	full, err := os.ReadFile(filepath.Join(src, "journal"))
	require.NoError(t, err)

	for cut := 0; cut <= len(full); cut++ {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "journal"), full[:cut], 0o644))
		j, rep, err := openMetaJournal(dir, true)
		require.NoError(t, err, "cut %d", cut)
		whole := 0
		for _, e := range ends {
			if e <= int64(cut) {
				whole++
			}
		}
		require.Len(t, rep.Records, whole, "cut %d", cut)
		var good int64
		if whole > 0 {
			good = ends[whole-1]
		}
		assert.Equal(t, int64(cut)-good, rep.TruncatedBytes, "cut %d", cut)
		// The journal keeps working after the repair.
		require.NoError(t, j.append(recs[0]))
		require.NoError(t, j.close())
		_, rep, err = openMetaJournal(dir, true)
		require.NoError(t, err)
		assert.Len(t, rep.Records, whole+1, "cut %d", cut)
	}
}

func TestMetaJournalCorruptByteStopsReplay(t *testing.T) {
	dir := t.TempDir()
	j, _, err := openMetaJournal(dir, true)
	require.NoError(t, err)
	recs := sampleMetaRecords()
	require.NoError(t, j.append(recs[0]))
	first := j.size
	require.NoError(t, j.append(recs[1:]...))
	require.NoError(t, j.close())
	path := filepath.Join(dir, "journal")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[first+metaFrameHeader+3] ^= 0xFF
	require.NoError(t, os.WriteFile(path, data, 0o644))
	_, rep, err := openMetaJournal(dir, true)
	require.NoError(t, err)
	assert.Len(t, rep.Records, 1)
	assert.Equal(t, first, rep.TruncatedAt)
}

func FuzzDecodeMetaRecord(f *testing.F) {
	for _, r := range sampleMetaRecords() {
		f.Add(r.encode(nil))
	}
	f.Add([]byte{})
	f.Add([]byte{9, 1, 2})
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeMetaRecord(body)
		if err != nil {
			return
		}
		// Whatever decodes must re-encode to a body that decodes the same.
		again, err := decodeMetaRecord(r.encode(nil))
		require.NoError(t, err)
		require.Equal(t, r, again)
	})
}

func TestLabelsFromName(t *testing.T) {
	cases := []struct{ name, ns, task string }{
		{"orders", "orders", ""},
		{"billing.invoices", "billing", "invoices"},
		{"a.b.c", "a", "b"},
		{".x", "", "x"},
		{"a.", "a", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ns, task := labelsFromName(c.name)
			assert.Equal(t, c.ns, ns)
			assert.Equal(t, c.task, task)
		})
	}
}

func TestCheckName(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
	}{
		{"orders", true}, {"a.b-c_d", true}, {"", false}, {"..", false}, {"../x", false},
		{"a/../b", false}, {"nul\x00", false}, {string(make([]byte, 256)), false},
	}
	for _, c := range cases {
		err := checkName("Queue", c.name)
		assert.Equal(t, c.ok, err == nil, "%q", c.name)
	}
}

func TestIDSeqIsIncreasing(t *testing.T) {
	var s idSeq
	prev, err := s.id()
	require.NoError(t, err)
	for i := 0; i < 1000; i++ {
		id, err := s.id()
		require.NoError(t, err)
		require.Equal(t, -1, compareIDs(prev, id))
		require.Equal(t, byte(0x80), id[8]&0xC0, "variant bits kept")
		prev = id
	}
}

func compareIDs(a, b [16]byte) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}
