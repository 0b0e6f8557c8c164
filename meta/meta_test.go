package meta

import (
	"bytes"
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

func id(b byte) (v [16]byte) { v[0], v[15] = 0x01, b; v[6] = 0x70; v[8] = 0x80; return v }

func sampleRecords() []Record {
	o := DefaultQueueOptions()
	o.RetryLimit, o.DeadLetterQueue = 7, true
	return []Record{
		{Kind: KindQueuePut, ID: id(1), CreatedAt: 1_700_000_000_000_000, Name: "orders", Namespace: "shop", Task: "billing", Opts: o},
		{Kind: KindPartitionCreate, ID: id(2), QueueID: id(1), CreatedAt: 1_700_000_000_000_001, Name: "cust-42"},
		{Kind: KindQueuePut, ID: id(3), CreatedAt: 1_700_000_000_000_002, Name: "gone", Opts: DefaultQueueOptions()},
		{Kind: KindPartitionCreate, ID: id(4), QueueID: id(3), CreatedAt: 1_700_000_000_000_003, Name: "Default"},
		{Kind: KindQueueDelete, ID: id(3)},
		{Kind: KindDescribed},
	}
}

func openMem(t *testing.T, fsys vfs.FS) (*Journal, *Replay) {
	t.Helper()
	j, rep, err := OpenJournal("/data/meta", Options{FS: fsys})
	require.NoError(t, err)
	return j, rep
}

func TestRecordRoundTripAndState(t *testing.T) {
	m := vfs.NewStrictMem("/data")
	j, rep := openMem(t, m)
	require.Empty(t, rep.Records)
	require.NoError(t, j.Close())
	require.NoError(t, WriteJournal(m, "/data/meta", sampleRecords(), false))

	j, rep = openMem(t, m.Crash(false))
	defer j.Close()
	require.Equal(t, sampleRecords(), rep.Records, "every acknowledged record survives a power loss")
	st := Apply(rep.Records)
	require.Len(t, st.Queues, 1)
	require.Equal(t, "orders", st.Queues[0].Name)
	require.Equal(t, int64(7), st.Queues[0].Opts.RetryLimit)
	require.Len(t, st.Partitions, 1)
	require.True(t, st.Deleted[id(3)] && st.Deleted[id(4)], "a deleted queue and its partition may be removed")
	require.True(t, st.Described)
}

// Bounded records: WriteJournal refuses what its reader would refuse, and
// writes nothing.
func TestWriteJournalRefusesOversizedRecords(t *testing.T) {
	m := vfs.NewMem()
	big := Record{Kind: KindQueuePut, ID: id(1), Name: "q", Namespace: strings.Repeat("n", 2<<20)}
	require.ErrorIs(t, WriteJournal(m, "/data/meta", []Record{big}, false), ErrRecordTooLarge)
	big.Namespace, big.Task = "", strings.Repeat("t", MaxStringBytes+1)
	require.ErrorIs(t, WriteJournal(m, "/data/meta", []Record{sampleRecords()[0], big}, false), ErrRecordTooLarge)
	require.Empty(t, m.Bytes("/data/meta/journal"), "nothing written, not even the valid record before it")
	ok := Record{Kind: KindQueuePut, ID: id(1), Name: "q", Task: strings.Repeat("t", MaxStringBytes)}
	require.NoError(t, WriteJournal(m, "/data/meta", []Record{ok}, false))
	_, rep := openMem(t, m)
	require.Equal(t, []Record{ok}, rep.Records)
}

// The tail rule: a torn tail and a damaged last frame are kept in quarantine
// and cut; damage before a valid frame refuses and changes nothing.
func TestOpenTailRule(t *testing.T) {
	good := func(t *testing.T) (*vfs.Mem, []byte) {
		m := vfs.NewMem()
		require.NoError(t, WriteJournal(m, "/data/meta", sampleRecords()[:2], false))
		return m, m.Bytes("/data/meta/journal")
	}
	_, data := good(t)
	first := record.HeaderSize + len(must(sampleRecords()[0].appendFrame(nil))) - record.HeaderSize
	t.Run("torn tail", func(t *testing.T) {
		m, data := good(t)
		m.SetBytes("/data/meta/journal", data[:len(data)-3])
		j, rep := openMem(t, m)
		defer j.Close()
		require.Len(t, rep.Records, 1)
		require.Equal(t, record.TailTorn, rep.Tail)
		require.Equal(t, int64(first), rep.CutAt)
		require.Equal(t, data[first:len(data)-3], m.Bytes(rep.KeptAt), "the cut bytes are kept")
		require.Len(t, m.Bytes("/data/meta/journal"), first)
	})
	t.Run("damaged last frame", func(t *testing.T) {
		m, data := good(t)
		d := bytes.Clone(data)
		d[len(d)-1] ^= 4
		m.SetBytes("/data/meta/journal", d)
		j, rep := openMem(t, m)
		defer j.Close()
		require.Equal(t, record.TailDamaged, rep.Tail)
		require.Equal(t, d[first:], m.Bytes(rep.KeptAt))
		require.True(t, strings.HasPrefix(rep.KeptAt, "/data/quarantine/meta/journal-"))
	})
	t.Run("damage before a valid frame", func(t *testing.T) {
		m, data := good(t)
		d := bytes.Clone(data)
		d[record.HeaderSize+2] ^= 4
		m.SetBytes("/data/meta/journal", d)
		_, _, err := OpenJournal("/data/meta", Options{FS: m})
		require.ErrorIs(t, err, ErrCorrupt)
		require.Equal(t, d, m.Bytes("/data/meta/journal"), "nothing changed")
		md, err := Read(m, "/data")
		require.NoError(t, err)
		require.Equal(t, record.TailCorrupt, md.Tail)
		require.Equal(t, []Record{sampleRecords()[1]}, md.Salvaged, "the record after the damage is salvaged")
	})
	require.NotEmpty(t, data)
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// Every boundary of a snapshot write (two snapshots, the second holding the
// first's records and more), failed with ENOSPC and EIO: the records of a
// snapshot whose WriteJournal returned nil survive a power loss; a failed one
// leaves the previous snapshot or the new one, never bytes a reopen refuses.
func TestEveryBoundary(t *testing.T) {
	scenario := func(fsys vfs.FS) (acked int, err error) {
		j, _, err := OpenJournal("/data/meta", Options{FS: fsys})
		if err != nil {
			return 0, err
		}
		defer j.Close()
		for _, n := range []int{3, len(sampleRecords())} {
			if err := WriteJournal(fsys, "/data/meta", sampleRecords()[:n], false); err != nil {
				return acked, err
			}
			acked = n
		}
		return acked, nil
	}
	rec := errorfs.New(vfs.NewStrictMem("/data"))
	rec.Record()
	_, err := scenario(rec)
	require.NoError(t, err)
	trace := rec.Trace()
	for i := range trace {
		for _, e := range []error{unix.ENOSPC, unix.EIO} {
			m := vfs.NewStrictMem("/data")
			fy := errorfs.New(m)
			fy.Inject(errorfs.FaultAt(trace, i, e))
			acked, _ := scenario(fy)
			j, rep, err := OpenJournal("/data/meta", Options{FS: m.Crash(false)})
			require.NoError(t, err, "boundary %d %v %v", i, trace[i], e)
			require.GreaterOrEqual(t, len(rep.Records), acked, "boundary %d %v %v: acknowledged records survive", i, trace[i], e)
			for k, r := range rep.Records {
				require.Equal(t, sampleRecords()[k], r)
			}
			j.Close()
		}
	}
}

// A version 1 journal is read, rewritten in the current format and kept.
func TestLegacyUpgrade(t *testing.T) {
	var v1 []byte
	for _, r := range sampleRecords()[:5] {
		body := r.appendBody(nil)
		v1 = binary.LittleEndian.AppendUint32(v1, uint32(len(body)))
		v1 = binary.LittleEndian.AppendUint64(v1, xxhash.Sum64(body))
		v1 = append(v1, body...)
	}
	m := vfs.NewMem()
	m.SetBytes("/data/meta/journal", append(bytes.Clone(v1), 1, 2, 3)) // and a torn tail
	md, err := Read(m, "/data")
	require.NoError(t, err)
	require.True(t, md.Legacy)
	require.Len(t, md.Records, 5)
	j, rep := openMem(t, m)
	require.Equal(t, 1, rep.UpgradedFrom)
	require.Equal(t, sampleRecords()[:5], rep.Records)
	require.Equal(t, append(bytes.Clone(v1), 1, 2, 3), m.Bytes("/data/meta/journal.v1"))
	require.NoError(t, j.Close())
	_, rep = openMem(t, m)
	require.Equal(t, 0, rep.UpgradedFrom, "upgraded once")
	require.Equal(t, sampleRecords()[:5], rep.Records)
}

func TestRebuildFromDescriptors(t *testing.T) {
	m := vfs.NewMem()
	recs := sampleRecords()
	// orders/cust-42 is in the journal; orders/p2 and a whole queue "lost"
	// exist only as descriptors; one directory has none.
	for _, d := range []Descriptor{
		{Kind: DescribesPartition, QueueID: id(1), Queue: "orders", PartitionID: id(2), Partition: "cust-42"},
		{Kind: DescribesPartition, QueueID: id(1), Queue: "orders", PartitionID: id(5), PartitionCreated: 5, Partition: "p2"},
		{Kind: DescribesPartition, QueueID: id(6), QueueCreatedAt: 6, Queue: "lost", Namespace: "ns", PartitionID: id(7), PartitionCreated: 7, Partition: "Default"},
		{Kind: DescribesDLQ, QueueID: id(6), QueueCreatedAt: 6, Queue: "lost", Namespace: "ns"},
		{Kind: DescribesPartition, QueueID: id(9), Queue: "orders", PartitionID: id(10), Partition: "x"},
	} {
		dir := filepath.Join("/data", PartitionsDir, IDString(d.PartitionID))
		if d.Kind == DescribesDLQ {
			dir = filepath.Join("/data", DLQDir, IDString(d.QueueID))
		}
		require.NoError(t, m.MkdirAll(dir))
		require.NoError(t, WriteDescriptor(m, dir, d, false))
	}
	require.NoError(t, m.MkdirAll(filepath.Join("/data", PartitionsDir, IDString(id(11)))))
	require.NoError(t, m.MkdirAll(filepath.Join("/data", PartitionsDir, IDString(id(4))))) // of the deleted queue

	out, rep, err := Rebuild(m, "/data", recs)
	require.NoError(t, err)
	require.Equal(t, len(recs), rep.Kept)
	require.Equal(t, []string{"lost"}, rep.Queues)
	require.Len(t, rep.Partitions, 2)
	require.Equal(t, []string{filepath.Join(PartitionsDir, IDString(id(11)))}, rep.Undescribed)
	require.Len(t, rep.Conflicts, 1)
	st := Apply(out)
	require.Len(t, st.Queues, 2)
	require.Equal(t, "ns", st.QueueByID[id(6)].Namespace)
	require.Equal(t, DefaultQueueOptions(), st.QueueByID[id(6)].Opts)
	require.Len(t, st.Partitions, 3)
	require.NoError(t, WriteJournal(m, "/data/meta", out, false))
	_, rep2 := openMem(t, m)
	require.Equal(t, out, rep2.Records)
}

func FuzzDecodeRecord(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(r.appendBody(nil))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeRecord(body)
		if err != nil {
			return
		}
		require.NoError(t, r.Check(), "a decoded record can be written back")
		again, err := decodeRecord(r.appendBody(nil))
		require.NoError(t, err)
		require.Equal(t, r, again)
	})
}

func FuzzDecodeDescriptor(f *testing.F) {
	d := Descriptor{Kind: DescribesPartition, QueueID: id(1), Queue: "q", PartitionID: id(2), Partition: "p"}
	b, _ := d.encode()
	f.Add(b)
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := decodeDescriptor(body)
		if err != nil {
			return
		}
		b, err := d.encode()
		require.NoError(t, err)
		again, err := decodeDescriptor(b)
		require.NoError(t, err)
		require.Equal(t, d, again)
	})
}

// A crash can stop the journal at any byte: opening keeps every whole record
// before the cut, keeps the cut bytes in quarantine, and cuts the file to the
// last record boundary.
func TestTornTailAtEveryByte(t *testing.T) {
	m := vfs.NewMem()
	require.NoError(t, WriteJournal(m, "/data/meta", sampleRecords(), false))
	var ends []int
	var frames []byte
	for _, r := range sampleRecords() {
		frames = must(r.appendFrame(frames))
		ends = append(ends, len(frames))
	}
	full := m.Bytes("/data/meta/journal")
	require.Equal(t, frames, full)
	for cut := 0; cut <= len(full); cut++ {
		c := vfs.NewMem()
		c.SetBytes("/data/meta/journal", full[:cut])
		j, rep := openMem(t, c)
		whole := 0
		for _, e := range ends {
			if e <= cut {
				whole++
			}
		}
		require.Len(t, rep.Records, whole, "cut %d", cut)
		boundary := 0
		if whole > 0 {
			boundary = ends[whole-1]
		}
		if cut > boundary {
			require.Equal(t, full[boundary:cut], c.Bytes(rep.KeptAt), "cut %d: the torn bytes are kept", cut)
		}
		require.Len(t, c.Bytes("/data/meta/journal"), boundary, "cut %d: the file ends at the last whole record", cut)
		require.NoError(t, j.Close())
	}
}

// A snapshot of the registry (State.Records) rebuilds the same state, with
// its covers mark and the tombstones of deleted queues and their partitions.
func TestStateRecordsRoundTrip(t *testing.T) {
	recs := append(sampleRecords(), Record{Kind: KindCovers, LSN: 77})
	st := Apply(recs)
	require.Equal(t, uint64(77), st.Covers)
	again := Apply(st.Records())
	require.Equal(t, st.Covers, again.Covers)
	require.Equal(t, st.Described, again.Described)
	require.Equal(t, st.Deleted, again.Deleted, "tombstones survive the snapshot")
	require.Equal(t, len(st.Queues), len(again.Queues))
	require.Equal(t, *st.Queues[0], *again.Queues[0])
	require.Equal(t, *st.Partitions[0], *again.Partitions[0])
	for _, r := range st.Records() {
		b, err := r.AppendBody(nil)
		require.NoError(t, err)
		d, err := DecodeBody(b)
		require.NoError(t, err)
		require.Equal(t, r.Kind, d.Kind)
	}
}
