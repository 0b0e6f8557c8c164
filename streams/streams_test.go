package streams

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	qA = [16]byte{1}
	p1 = [16]byte{2}
	p2 = [16]byte{3}
)

func upsert(key, val string, at int64) Op {
	return Op{Kind: OpUpsert, Key: key, Value: []byte(val), UpdatedAtMicros: at}
}

func newStoreWith(t *testing.T) *Store {
	t.Helper()
	s := NewStore()
	s.ApplyQuery(1, Query{ID: qA, Name: "a", Source: "src", ConfigHash: "h1"}, false)
	return s
}

func TestApplyChangeIsIdempotentByLSN(t *testing.T) {
	s := newStoreWith(t)
	c1 := Change{Query: qA, Partition: p1, Ops: []Op{upsert("k", `1`, 10), upsert("x", `{}`, 10)}}
	c2 := Change{Query: qA, Partition: p1, Ops: []Op{upsert("k", `2`, 20), {Kind: OpDelete, Key: "x", UpdatedAtMicros: 20}}}
	require.True(t, s.ApplyChange(5, &c1))
	require.True(t, s.ApplyChange(7, &c2))
	assert.False(t, s.ApplyChange(5, &c1), "a replayed older change must not regress the shard")
	assert.False(t, s.ApplyChange(7, &c2))
	rows := s.Rows(ShardKey{qA, p1}, Filter{})
	require.Len(t, rows, 1)
	assert.Equal(t, KeyRow{Key: "k", Row: Row{Value: []byte(`2`), UpdatedAtMicros: 20}}, rows[0])
	assert.Equal(t, Totals{Queries: 1, Keys: 1, Bytes: 2}, s.Totals())
	assert.Equal(t, uint64(5), s.MinDirtyLSN())
	assert.False(t, s.ApplyChange(9, &Change{Query: [16]byte{9}, Partition: p1}), "unknown query")
}

func TestRowsFiltersAreAnded(t *testing.T) {
	s := newStoreWith(t)
	s.ApplyChange(2, &Change{Query: qA, Partition: p1, Ops: []Op{upsert("w:2", `2`, 1), upsert("w:1", `1`, 1), upsert("z", `3`, 1)}})
	k := ShardKey{qA, p1}
	keys := func(rs []KeyRow) (out []string) {
		for _, r := range rs {
			out = append(out, r.Key)
		}
		return out
	}
	assert.Equal(t, []string{"w:1", "w:2", "z"}, keys(s.Rows(k, Filter{})), "sorted by key")
	assert.Equal(t, []string{"w:1", "w:2"}, keys(s.Rows(k, Filter{KeyPrefix: "w:"})))
	assert.Equal(t, []string{"w:2", "z"}, keys(s.Rows(k, Filter{Keys: []string{"z", "w:2", "nope", "z"}})))
	assert.Equal(t, []string{"w:2"}, keys(s.Rows(k, Filter{Keys: []string{"z", "w:2"}, KeyPrefix: "w:"})))
	assert.Equal(t, []string{"w:1"}, keys(s.Rows(k, Filter{KeyPrefix: "w:", Match: func(v []byte) bool { return string(v) == "1" }})))
	assert.Empty(t, s.Rows(ShardKey{qA, p2}, Filter{}))
}

func TestResetDropsOlderShards(t *testing.T) {
	s := newStoreWith(t)
	s.ApplyChange(2, &Change{Query: qA, Partition: p1, Ops: []Op{upsert("k", `1`, 1)}})
	q, _ := s.Query(qA)
	q.ConfigHash = "h2"
	dropped := s.ApplyQuery(3, q, true)
	assert.Equal(t, []ShardKey{{qA, p1}}, dropped)
	assert.False(t, s.ApplyChange(2, &Change{Query: qA, Partition: p1, Ops: []Op{upsert("k", `1`, 1)}}), "older than the reset")
	assert.True(t, s.ApplyChange(4, &Change{Query: qA, Partition: p1, Ops: []Op{upsert("k", `9`, 1)}}))
	assert.Empty(t, s.ApplyQuery(3, q, true), "replaying the reset keeps the newer shard")
	got, _ := s.Query(qA)
	assert.Equal(t, uint64(3), got.ResetLSN)
}

func TestSizeAfter(t *testing.T) {
	s := newStoreWith(t)
	s.ApplyChange(2, &Change{Query: qA, Partition: p1, Ops: []Op{upsert("a", `1`, 1), upsert("b", `1`, 1)}})
	c := Change{Query: qA, Partition: p1, Ops: []Op{{Kind: OpDelete, Key: "a"}, upsert("c", `1`, 1), upsert("c", `222`, 1), {Kind: OpDelete, Key: "zz"}, upsert("b", `12345`, 1)}}
	keys, bytes := s.SizeAfter(&c)
	assert.Equal(t, 2, keys, "b and c")
	assert.Equal(t, int64(len("b12345")+len("c222")), bytes)
	empty := Change{Query: qA, Partition: p2, Ops: []Op{upsert("x", `{}`, 1), {Kind: OpDelete, Key: "x"}}}
	keys, bytes = s.SizeAfter(&empty)
	assert.Equal(t, 0, keys)
	assert.Zero(t, bytes)
}

// Files: snapshots and the registry round-trip through a Mem twin; an
// unchanged shard is not written again; a torn temporary file is removed.
func TestFilesRoundTrip(t *testing.T) {
	mem := vfs.NewMem()
	f := &Files{FS: mem, Root: "/d/streams"}
	s := newStoreWith(t)
	for i := 1; i <= 1000; i++ {
		s.ApplyChange(uint64(10+i), &Change{Query: qA, Partition: p1, Ops: []Op{upsert("k", fmt.Sprint(i), int64(i))}})
	}
	s.ApplyChange(2000, &Change{Query: qA, Partition: p2, Ops: []Op{upsert("x", `"y"`, 5)}})
	require.NoError(t, s.WriteRegistry(f, 2000))
	require.NoError(t, s.WriteSnapshots(f))
	assert.Zero(t, s.MinDirtyLSN())
	snap := mem.Bytes(f.ShardPath(ShardKey{qA, p1}))
	assert.Less(t, len(snap), 100, "1,000 updates of one key leave one small snapshot")

	mem.SetBytes(f.ShardPath(ShardKey{qA, p1})+".tmp", []byte("torn"))
	l, err := f.Load()
	require.NoError(t, err)
	assert.Equal(t, uint64(2000), l.MaxLSN())
	s2 := NewStore()
	stale := s2.Restore(l, func(p [16]byte) bool { return p != p2 })
	assert.Equal(t, []string{f.ShardPath(ShardKey{qA, p2})}, stale, "a deleted partition's shard is stale")
	assert.Equal(t, s.Rows(ShardKey{qA, p1}, Filter{}), s2.Rows(ShardKey{qA, p1}, Filter{}))
	assert.False(t, s2.ApplyChange(1010, &Change{Query: qA, Partition: p1, Ops: []Op{upsert("k", `0`, 0)}}))
	assert.Equal(t, []string{f.ShardPath(ShardKey{qA, p1}) + ".tmp"}, l.Leftovers)
	_, err = mem.ReadFile(f.ShardPath(ShardKey{qA, p1}) + ".tmp")
	assert.NoError(t, err, "Load writes nothing: a reader of a live directory must not remove the server's write")

	// Damage is reported, never guessed over.
	b := mem.Bytes(f.ShardPath(ShardKey{qA, p1}))
	b[len(b)-1] ^= 0xff
	mem.SetBytes(f.ShardPath(ShardKey{qA, p1}), b)
	_, err = f.Load()
	var fe *FileError
	require.ErrorAs(t, err, &fe)
	assert.ErrorIs(t, err, record.ErrChecksum)
	assert.Equal(t, f.ShardPath(ShardKey{qA, p1}), fe.File)
}

func TestSnapshotInTheWrongPlaceIsDamage(t *testing.T) {
	mem := vfs.NewMem()
	f := &Files{FS: mem, Root: "/d/streams"}
	s := newStoreWith(t)
	s.ApplyChange(2, &Change{Query: qA, Partition: p1, Ops: []Op{upsert("k", `1`, 1)}})
	require.NoError(t, s.WriteSnapshots(f))
	src := f.ShardPath(ShardKey{qA, p1})
	mem.SetBytes(filepath.Join(filepath.Dir(src), "00000000-0000-0000-0000-000000000000"), mem.Bytes(src))
	_, err := f.Load()
	assert.ErrorIs(t, err, ErrCorrupt)
}

func TestEncodingsRoundTrip(t *testing.T) {
	q := Query{ID: qA, Name: "n", Source: "s", Sink: "k", ConfigHash: "h", CreatedAtMicros: -1, UpdatedAtMicros: 7}
	got, reset, err := DecodeEntry(EncodeEntry(q, true))
	require.NoError(t, err)
	assert.True(t, reset)
	assert.Equal(t, q, got)
	q.ResetLSN = 99
	r, err := DecodeRegistry(EncodeRegistry(Registry{Covers: 5, Queries: []Query{q}}))
	require.NoError(t, err)
	assert.Equal(t, Registry{Covers: 5, Queries: []Query{q}}, r)
	c := Change{Query: qA, Partition: p1, Ops: []Op{upsert("k", `{"a":1}`, 3), {Kind: OpDelete, Key: "d", UpdatedAtMicros: 4}}}
	d := &record.Fields{B: AppendChange(nil, &c)}
	assert.Equal(t, c, ReadChange(d))
	require.NoError(t, d.End())
}

func FuzzDecodeSnapshot(f *testing.F) {
	f.Add(EncodeSnapshot(&Snapshot{Query: qA, Partition: p1, LSN: 3, Cycles: 2, Rows: []KeyRow{{Key: "a", Row: Row{Value: []byte("1")}}}}))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSnapshot(b)
		if err != nil {
			return
		}
		again, err := DecodeSnapshot(EncodeSnapshot(&s))
		if err != nil || !reflect.DeepEqual(s, again) {
			t.Fatalf("a decoded snapshot does not round-trip: %v", err)
		}
	})
}

func FuzzDecodeRegistry(f *testing.F) {
	f.Add(EncodeRegistry(Registry{Covers: 1, Queries: []Query{{ID: qA, Name: "n", ResetLSN: 4}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRegistry(b)
		if err != nil {
			return
		}
		again, err := DecodeRegistry(EncodeRegistry(r))
		if err != nil || !reflect.DeepEqual(r, again) {
			t.Fatalf("a decoded registry does not round-trip: %v", err)
		}
	})
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add(EncodeEntry(Query{ID: qA, Name: "n", Source: "s"}, true))
	f.Fuzz(func(t *testing.T, b []byte) {
		q, reset, err := DecodeEntry(b)
		if err != nil {
			return
		}
		q2, reset2, err := DecodeEntry(EncodeEntry(q, reset))
		if err != nil || q != q2 || reset != reset2 {
			t.Fatalf("a decoded entry does not round-trip: %v", err)
		}
	})
}

func FuzzReadChange(f *testing.F) {
	f.Add(AppendChange(nil, &Change{Query: qA, Partition: p1, Ops: []Op{upsert("k", "v", 1), {Kind: OpDelete, Key: "d"}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := &record.Fields{B: b}
		c := ReadChange(d)
		if d.End() != nil {
			return
		}
		d2 := &record.Fields{B: AppendChange(nil, &c)}
		c2 := ReadChange(d2)
		if d2.End() != nil || !reflect.DeepEqual(c, c2) {
			t.Fatalf("a decoded change does not round-trip")
		}
	})
}

// Match (a JSON decode per row in the HTTP layer's ripe filter) runs after
// the store's lock is released: a read of a large shard must not hold up
// every cycle's apply.
func TestRowsMatchRunsOutsideTheStoreLock(t *testing.T) {
	s := newStoreWith(t)
	s.ApplyChange(5, &Change{Query: qA, Partition: p1, Ops: []Op{upsert("b", `2`, 1), upsert("a", `1`, 1), upsert("c", `3`, 1)}})
	var locked []bool
	rows := s.Rows(ShardKey{qA, p1}, Filter{Match: func(v []byte) bool {
		free := s.mu.TryLock()
		if free {
			s.mu.Unlock()
		}
		locked = append(locked, !free)
		return string(v) != `2`
	}})
	assert.Equal(t, []bool{false, false, false}, locked)
	require.Len(t, rows, 2)
	assert.Equal(t, "a", rows[0].Key)
	assert.Equal(t, "c", rows[1].Key)
}
