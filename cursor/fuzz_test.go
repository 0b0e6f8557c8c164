package cursor

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// entry is one decoded body entry, for comparisons.
type entry struct {
	Kind    byte
	Key     Key
	State   lease.State
	Sub     subKey
	SubVal  Subscription
	Deleted bool
	RecID   uint64
	Rec     string
	DropAll bool // format 1
}

type recorder struct{ got []entry }

func (r *recorder) state(k Key, s lease.State, del bool) {
	r.got = append(r.got, entry{Kind: tagState, Key: k, State: s, Deleted: del})
}
func (r *recorder) sub(k subKey, s Subscription, del bool) {
	r.got = append(r.got, entry{Kind: tagSub, Sub: k, SubVal: s, Deleted: del})
}
func (r *recorder) record(id uint64, b []byte) {
	r.got = append(r.got, entry{Kind: tagRecord, RecID: id, Rec: string(b)})
}
func (r *recorder) dropRecord(id uint64) {
	r.got = append(r.got, entry{Kind: tagDropRecord, RecID: id})
}
func (r *recorder) dropAllRecords() { r.got = append(r.got, entry{Kind: tagDropRecord, DropAll: true}) }

// encodeEntries appends es to the open body of enc; records are written in
// format 2's shape (format 3 has none: only the old-format helpers use them).
func encodeEntries(enc *encoder, es []entry) {
	for _, x := range es {
		switch x.Kind {
		case tagState:
			enc.state(x.Key, x.State, x.Deleted)
		case tagSub:
			enc.sub(x.Sub, x.SubVal, x.Deleted)
		case tagRecord:
			enc.entries++
			enc.buf = append(enc.buf, tagRecord)
			enc.buf = binary.AppendUvarint(enc.buf, x.RecID)
			enc.buf = binary.AppendUvarint(enc.buf, uint64(len(x.Rec)))
			enc.buf = append(enc.buf, x.Rec...)
		case tagDropRecord:
			enc.entries++
			enc.buf = append(enc.buf, tagDropRecord)
			enc.buf = binary.AppendUvarint(enc.buf, x.RecID)
		}
	}
}

// testClockMicros is the writer's clock of the checkpoint bodies tests build.
const testClockMicros = 1_780_000_000_000_000

// checkpointBody is a version 4 checkpoint body holding es.
func checkpointBody(es []entry) []byte {
	enc := newEncoder(nil)
	enc.beginCheckpoint(testClockMicros)
	encodeEntries(enc, es)
	return append([]byte(nil), enc.body()...)
}

// snapshotFile is a format 3 snapshot file holding es in one entries frame
// and the legacy records.
func snapshotFile(replayFrom uint64, es []entry, legacy [][]byte) []byte {
	b, _ := snapshotFormat.Append(nil, []byte{snapHeader})
	frames := uint64(0)
	if len(es) > 0 {
		enc := newEncoder(&snapshotFormat)
		enc.begin()
		enc.buf = append(enc.buf, snapEntries)
		encodeEntries(enc, es)
		if err := enc.finish(); err != nil {
			panic(err)
		}
		b = append(b, enc.buf...)
		frames = 1
	}
	for _, rec := range legacy {
		b, _ = snapshotFormat.Append(b, append([]byte{snapLegacy}, rec...))
	}
	tr := []byte{snapTrailer}
	for _, v := range []uint64{frames, uint64(len(es)), uint64(len(legacy)), replayFrom} {
		tr = binary.LittleEndian.AppendUint64(tr, v)
	}
	b, err := snapshotFormat.Append(b, tr)
	if err != nil {
		panic(err)
	}
	return b
}

// v2CheckpointFrame is one format 2 checkpoint frame holding es.
func v2CheckpointFrame(seq uint64, es []entry) []byte {
	enc := newEncoder(&v2CheckpointFormat)
	enc.begin()
	enc.buf = binary.LittleEndian.AppendUint64(enc.buf, seq)
	encodeEntries(enc, es)
	if err := enc.finish(); err != nil {
		panic(err)
	}
	return append([]byte(nil), enc.buf...)
}

// sampleEntries has one entry of every kind format 3 holds.
func sampleEntries() []entry {
	return []entry{
		{Kind: tagState, Key: Key{pid(1), "billing"}, State: lease.State{Committed: 12}},
		{Kind: tagState, Key: Key{pid(2), "billing"}, State: lease.State{Committed: 3, Retries: 1, Lease: lease.Lease{ID: pid(9), WorkerID: "w-1", Start: 4, End: 8, ExpiresAtMicros: 1_753_866_764_881_042, Attempts: 2}}},
		{Kind: tagState, Key: Key{pid(3), "__QUEUE_MODE__"}, Deleted: true},
		{Kind: tagSub, Sub: subKey{"orders", "billing"}, SubVal: Subscription{Mode: SubTimestamp, TimestampMicros: 5, CreatedAtMicros: 6}},
		{Kind: tagSub, Sub: subKey{"orders", "old"}, Deleted: true},
	}
}

// sampleV2Entries adds format 2's record entries.
func sampleV2Entries() []entry {
	return append(sampleEntries(), entry{Kind: tagDropRecord, RecID: 4}, entry{Kind: tagRecord, RecID: 5, Rec: "redo"})
}

// FuzzDecodeCheckpoint feeds ApplyCheckpoint: it never panics, refuses with
// ErrCorrupt and changes nothing, or applies a body whose entries re-encode
// to a body decoding to the same entries.
func FuzzDecodeCheckpoint(f *testing.F) {
	f.Add(checkpointBody(sampleEntries()))
	f.Add(checkpointBody(nil))
	f.Add([]byte{checkpointV3, 9})
	f.Add([]byte{checkpointV3})
	f.Add([]byte{checkpointVersion, 0x80})
	f.Fuzz(func(t *testing.T, body []byte) {
		e, _, err := Open("/c", Options{FS: vfs.NewMem(), NoSync: true})
		require.NoError(t, err)
		if err := e.ApplyCheckpoint(body); err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			require.Zero(t, e.Len(), "a refused body changes nothing")
			return
		}
		entries, err := checkpointEntries(body)
		require.NoError(t, err)
		var r recorder
		require.NoError(t, decodeEntries(entries, formatVersion, &r))
		again, err := checkpointEntries(checkpointBody(r.got))
		require.NoError(t, err)
		var r2 recorder
		require.NoError(t, decodeEntries(again, formatVersion, &r2))
		require.Equal(t, r.got, r2.got)
	})
}

// FuzzDecodeSnapshot: loading a snapshot file never panics, and what loads
// re-encodes to a file loading to the same replayFrom, entries and legacy
// records.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(snapshotFile(7, sampleEntries(), [][]byte{[]byte("redo")}))
	f.Add(snapshotFile(1, nil, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r recorder
		from, legacy, err := loadSnapshot(data, "fuzz", &r)
		if err != nil {
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce, "every refusal is reported as damage")
			return
		}
		var r2 recorder
		from2, legacy2, err := loadSnapshot(snapshotFile(from, r.got, legacy), "again", &r2)
		require.NoError(t, err)
		require.Equal(t, from, from2)
		require.Equal(t, r.got, r2.got)
		require.Equal(t, legacy, legacy2)
	})
}

// framed cuts data into bodies (each a length byte and that many bytes; the
// last takes what is left) and frames every non-empty one with f, so the
// fuzzer reaches past the checksums into what the bodies mean.
func framed(f record.Format, data []byte) []byte {
	var out []byte
	for len(data) > 0 {
		n := min(int(data[0]), len(data)-1)
		body := data[1 : 1+n]
		data = data[1+n:]
		if len(body) > 0 {
			out, _ = f.Append(out, body)
		}
	}
	return out
}

// unframed is the inverse of framed for seeding: bodies of up to 255 bytes.
func unframed(f record.Format, b []byte) []byte {
	var out []byte
	for len(b) > 0 {
		body, n, err := f.Next(b)
		if err != nil || len(body) > 255 {
			break
		}
		out = append(out, byte(len(body)))
		out = append(out, body...)
		b = b[n:]
	}
	return out
}

// FuzzSnapshotStructure frames fuzzed bodies into a snapshot file: loading
// never panics, refuses anything but header, entries and legacy frames,
// trailer with matching counts, and what loads re-encodes to the same.
func FuzzSnapshotStructure(f *testing.F) {
	f.Add(unframed(snapshotFormat, snapshotFile(7, sampleEntries()[:3], [][]byte{[]byte("r")})))
	f.Add(unframed(snapshotFormat, snapshotFile(1, nil, nil)))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r recorder
		from, legacy, err := loadSnapshot(framed(snapshotFormat, data), "fuzz", &r)
		if err != nil {
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce)
			return
		}
		var r2 recorder
		from2, legacy2, err := loadSnapshot(snapshotFile(from, r.got, legacy), "again", &r2)
		require.NoError(t, err)
		require.Equal(t, from, from2)
		require.Equal(t, r.got, r2.got)
		require.Equal(t, legacy, legacy2)
	})
}

// FuzzDecodeV1 feeds the format 1 decoder (used by the upgrade): it never
// panics, and a frame it accepts has a body inside the input.
func FuzzDecodeV1(f *testing.F) {
	f.Add(v1Frame(v1KindCheckpoint, 3, sampleV1Body()))
	f.Add(v1Frame(v1KindSnapshot, 3, sampleV1Body()))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, kind := range []byte{v1KindCheckpoint, v1KindSnapshot} {
			_, body, n, err := decodeV1Frame(data, kind)
			if err != nil {
				continue
			}
			require.LessOrEqual(t, n, len(data))
			require.Len(t, body, n-v1HeaderLen)
			_ = decodeEntries(body, 1, &recorder{})
		}
	})
}

// upgradeOnce opens a directory holding the format 2 journal data: Open
// either refuses with a *CorruptionError (and changes nothing) or upgrades
// it to a snapshot that a second Open loads to the same state.
func upgradeOnce(t *testing.T, journal []byte) {
	fsys := vfs.NewMem()
	fsys.SetBytes("/c/"+v2JournalName(1), journal)
	e, rep, err := Open("/c", Options{FS: fsys, NoSync: true})
	if err != nil {
		var ce *CorruptionError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, journal, fsys.Bytes("/c/"+v2JournalName(1)), "a refused upgrade changes nothing")
		return
	}
	require.True(t, rep.Upgraded)
	want := dumpOf(e)
	e2, rep2, err := Open("/c", Options{FS: fsys, NoSync: true})
	require.NoError(t, err)
	require.False(t, rep2.Upgraded, "upgraded once")
	require.Equal(t, want, dumpOf(e2))
	require.Equal(t, rep.LegacyRecords, rep2.LegacyRecords)
}

// FuzzUpgradeV2Journal upgrades a directory whose only journal holds the
// fuzzed bytes (format 2 tail rules, sequence checks, entry decoding).
func FuzzUpgradeV2Journal(f *testing.F) {
	two := append(v2CheckpointFrame(1, sampleV2Entries()[:2]), v2CheckpointFrame(2, sampleV2Entries()[3:])...)
	f.Add(two)
	f.Add(append(two[:len(two)-3], make([]byte, 40)...))
	f.Add(append(append([]byte(nil), two...), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'x'))
	f.Fuzz(upgradeOnce)
}

// FuzzUpgradeV2Checkpoints frames fuzzed bodies into the only format 2
// journal of a directory, so the fuzzer reaches past the checksums.
func FuzzUpgradeV2Checkpoints(f *testing.F) {
	f.Add(unframed(v2CheckpointFormat, append(v2CheckpointFrame(1, sampleV2Entries()[:2]), v2CheckpointFrame(2, sampleV2Entries()[3:])...)))
	f.Add(unframed(v2CheckpointFormat, append(v2CheckpointFrame(1, nil), v2CheckpointFrame(3, nil)...)))
	f.Fuzz(func(t *testing.T, data []byte) { upgradeOnce(t, framed(v2CheckpointFormat, data)) })
}
