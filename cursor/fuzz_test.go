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

// encodeEntries appends es to the open frame of enc.
func encodeEntries(enc *encoder, es []entry) {
	for _, x := range es {
		switch x.Kind {
		case tagState:
			enc.state(x.Key, x.State, x.Deleted)
		case tagSub:
			enc.sub(x.Sub, x.SubVal, x.Deleted)
		case tagRecord:
			enc.record(x.RecID, []byte(x.Rec))
		case tagDropRecord:
			enc.dropRecord(x.RecID)
		}
	}
}

// checkpointFrame is one format 2 checkpoint frame holding es.
func checkpointFrame(seq uint64, es []entry) []byte {
	enc := newEncoder(checkpointFormat)
	enc.beginCheckpoint(seq)
	encodeEntries(enc, es)
	if err := enc.finish(); err != nil {
		panic(err)
	}
	return append([]byte(nil), enc.frame()...)
}

// snapshotFile is a format 2 snapshot file holding es in one entries frame.
func snapshotFile(upTo uint64, es []entry) []byte {
	var b []byte
	var err error
	b, _ = snapshotFormat.Append(b, binary.LittleEndian.AppendUint64([]byte{snapHeader}, upTo))
	frames := uint64(0)
	if len(es) > 0 {
		enc := newEncoder(snapshotFormat)
		enc.begin()
		enc.buf = append(enc.buf, snapEntries)
		encodeEntries(enc, es)
		if err = enc.finish(); err != nil {
			panic(err)
		}
		b = append(b, enc.buf...)
		frames = 1
	}
	tr := binary.LittleEndian.AppendUint64([]byte{snapTrailer}, frames)
	tr = binary.LittleEndian.AppendUint64(tr, uint64(len(es)))
	b, err = snapshotFormat.Append(b, tr)
	if err != nil {
		panic(err)
	}
	return b
}

// sampleEntries has one entry of every kind.
func sampleEntries() []entry {
	return []entry{
		{Kind: tagState, Key: Key{pid(1), "billing"}, State: lease.State{Committed: 12}},
		{Kind: tagState, Key: Key{pid(2), "billing"}, State: lease.State{Committed: 3, Retries: 1, Lease: lease.Lease{ID: pid(9), WorkerID: "w-1", Start: 4, End: 8, ExpiresAtMicros: 1_753_866_764_881_042, Attempts: 2}}},
		{Kind: tagState, Key: Key{pid(3), "__QUEUE_MODE__"}, Deleted: true},
		{Kind: tagSub, Sub: subKey{"orders", "billing"}, SubVal: Subscription{Mode: SubTimestamp, TimestampMicros: 5, CreatedAtMicros: 6}},
		{Kind: tagSub, Sub: subKey{"orders", "old"}, Deleted: true},
		{Kind: tagDropRecord, RecID: 4},
		{Kind: tagRecord, RecID: 5, Rec: "redo"},
	}
}

// FuzzDecodeCheckpoint: decoding a checkpoint frame never panics, and what
// decodes re-encodes to a frame decoding to the same sequence and entries.
func FuzzDecodeCheckpoint(f *testing.F) {
	ck := checkpointFrame(7, sampleEntries())
	f.Add(ck)
	f.Add(ck[:40])
	f.Add(checkpointFrame(1, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		body, n, err := checkpointFormat.Next(data)
		if err != nil {
			return
		}
		require.LessOrEqual(t, n, len(data))
		seq, entries, err := checkpointBody(body)
		if err != nil {
			return
		}
		var r recorder
		if decodeEntries(entries, formatVersion, &r) != nil {
			return
		}
		again := checkpointFrame(seq, r.got)
		body2, _, err := checkpointFormat.Next(again)
		require.NoError(t, err)
		seq2, entries2, err := checkpointBody(body2)
		require.NoError(t, err)
		require.Equal(t, seq, seq2)
		var r2 recorder
		require.NoError(t, decodeEntries(entries2, formatVersion, &r2))
		require.Equal(t, r.got, r2.got)
	})
}

// FuzzDecodeSnapshot: loading a snapshot file never panics, and what loads
// re-encodes to a file loading to the same checkpoint and entries.
func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(snapshotFile(7, sampleEntries()))
	f.Add(snapshotFile(0, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r recorder
		upTo, err := loadSnapshot(data, "fuzz", &r)
		if err != nil {
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce, "every refusal is reported as damage")
			return
		}
		var r2 recorder
		upTo2, err := loadSnapshot(snapshotFile(upTo, r.got), "again", &r2)
		require.NoError(t, err)
		require.Equal(t, upTo, upTo2)
		require.Equal(t, r.got, r2.got)
	})
}

// FuzzDecodeBody skips the checksum so the fuzzer reaches the entry decoder.
func FuzzDecodeBody(f *testing.F) {
	ck := checkpointFrame(7, sampleEntries())
	f.Add(ck[record.HeaderSize+seqLen:])
	f.Add([]byte{9})
	f.Fuzz(func(t *testing.T, body []byte) {
		var r recorder
		if decodeEntries(body, formatVersion, &r) != nil {
			return
		}
		enc := newEncoder(checkpointFormat)
		enc.begin()
		encodeEntries(enc, r.got)
		var r2 recorder
		require.NoError(t, decodeEntries(enc.buf[enc.start+record.HeaderSize:], formatVersion, &r2))
		require.Equal(t, r.got, r2.got)
	})
}

// FuzzDecodeV1 feeds the format 1 decoder (still used by the upgrade): it
// never panics, and a frame it accepts has a body inside the input.
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

// FuzzRecoverJournal opens a directory whose only journal holds the fuzzed
// bytes: Open never panics and either refuses with a *CorruptionError or
// recovers a state that a second Open (after a clean Close) recovers again.
func FuzzRecoverJournal(f *testing.F) {
	two := append(checkpointFrame(1, sampleEntries()[:2]), checkpointFrame(2, sampleEntries()[3:])...)
	f.Add(two)
	f.Add(append(two[:len(two)-3], make([]byte, 40)...))
	f.Add(append(append([]byte(nil), two...), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 'x'))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := vfs.NewMem()
		fsys.SetBytes("/c/"+journalName(1), data)
		opts := Options{FS: fsys, NoSync: true, CheckpointInterval: 1 << 40}
		e, _, err := Open("/c", opts)
		if err != nil {
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce)
			return
		}
		want := dumpOf(e)
		require.NoError(t, e.Close())
		e2, rep, err := Open("/c", opts)
		require.NoError(t, err)
		defer e2.Close()
		require.Equal(t, want, dumpOf(e2))
		require.Zero(t, rep.TornBytes, "the first Open left only zeros after the last checkpoint")
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
// never panics, refuses anything but header, entries, trailer with matching
// counts, and what loads re-encodes to the same entries.
func FuzzSnapshotStructure(f *testing.F) {
	f.Add(unframed(snapshotFormat, snapshotFile(7, sampleEntries()[:3])))
	f.Add(unframed(snapshotFormat, snapshotFile(0, nil)))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r recorder
		upTo, err := loadSnapshot(framed(snapshotFormat, data), "fuzz", &r)
		if err != nil {
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce)
			return
		}
		var r2 recorder
		upTo2, err := loadSnapshot(snapshotFile(upTo, r.got), "again", &r2)
		require.NoError(t, err)
		require.Equal(t, upTo, upTo2)
		require.Equal(t, r.got, r2.got)
	})
}

// FuzzReplayCheckpoints frames fuzzed bodies into the only journal of a
// directory: recovery (sequence checks, entry decoding) never panics, refuses
// with a *CorruptionError or recovers a state a second Open recovers again.
func FuzzReplayCheckpoints(f *testing.F) {
	two := append(checkpointFrame(1, sampleEntries()[:2]), checkpointFrame(2, sampleEntries()[3:5])...)
	f.Add(unframed(checkpointFormat, two))
	f.Add(unframed(checkpointFormat, append(checkpointFrame(1, nil), checkpointFrame(3, nil)...)))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := vfs.NewMem()
		fsys.SetBytes("/c/"+journalName(1), framed(checkpointFormat, data))
		opts := Options{FS: fsys, NoSync: true, CheckpointInterval: 1 << 40}
		e, _, err := Open("/c", opts)
		if err != nil {
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce)
			return
		}
		want := dumpOf(e)
		require.NoError(t, e.Close())
		e2, _, err := Open("/c", opts)
		require.NoError(t, err)
		defer e2.Close()
		require.Equal(t, want, dumpOf(e2))
	})
}
