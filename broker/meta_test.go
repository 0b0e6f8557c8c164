package broker

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/cespare/xxhash/v2"
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

// Issue 5: only a torn tail is truncated. Damage that a valid record follows,
// or a record that passes its checksum but does not decode, makes replay refuse
// with ErrCorrupt naming the file and byte range, and leaves the file alone.
func TestMetaJournalDamage(t *testing.T) {
	frame := func(body []byte) []byte {
		b := binary.LittleEndian.AppendUint32(nil, uint32(len(body)))
		b = binary.LittleEndian.AppendUint64(b, xxhash.Sum64(body))
		return append(b, body...)
	}
	cases := []struct {
		name      string
		damage    func(data []byte, ends []int64) []byte
		corrupt   bool
		wantRange string // "[start,end)" of the damage when corrupt
		records   int    // replayed when not corrupt
	}{
		{"flipped byte in the first record, whole records after it", func(d []byte, _ []int64) []byte {
			d[metaFrameHeader+3] ^= 0xFF
			return d
		}, true, "[0,", 0},
		{"flipped length of a middle record", func(d []byte, e []int64) []byte {
			d[e[0]] ^= 0x01
			return d
		}, true, "", 0},
		{"flipped byte in the last record is a torn tail", func(d []byte, e []int64) []byte {
			d[e[2]+metaFrameHeader+1] ^= 0xFF
			return d
		}, false, "", 3},
		{"zeros after the last record are a torn tail", func(d []byte, _ []int64) []byte {
			return append(d, make([]byte, 40)...)
		}, false, "", 4},
		{"a last record with a valid checksum that does not decode", func(d []byte, _ []int64) []byte {
			return append(d, frame([]byte{99, 1, 2, 3})...)
		}, true, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			j, _, err := openMetaJournal(dir, true)
			require.NoError(t, err)
			var ends []int64
			for _, r := range sampleMetaRecords() {
				require.NoError(t, j.append(r))
				ends = append(ends, j.size)
			}
			require.NoError(t, j.close())
			path := filepath.Join(dir, "journal")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			data = tc.damage(data, ends)
			require.NoError(t, os.WriteFile(path, data, 0o644))

			j, rep, err := openMetaJournal(dir, true)
			if tc.corrupt {
				require.ErrorIs(t, err, ErrCorrupt)
				assert.Contains(t, err.Error(), path)
				if tc.wantRange != "" {
					assert.Contains(t, err.Error(), "bytes "+tc.wantRange)
				}
				after, rerr := os.ReadFile(path)
				require.NoError(t, rerr)
				assert.Equal(t, data, after, "nothing truncated")
				return
			}
			require.NoError(t, err)
			defer j.close()
			assert.Len(t, rep.Records, tc.records)
			assert.Equal(t, int64(len(data))-ends[tc.records-1], rep.TruncatedBytes)
		})
	}
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
