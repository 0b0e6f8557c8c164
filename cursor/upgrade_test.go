package cursor

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/vfs"
)

// v1Frame builds a format 1 frame (format_v1.go), as the format 1 writer did.
func v1Frame(kind byte, seq uint64, body []byte) []byte {
	h := make([]byte, v1HeaderLen)
	copy(h, "CCKP")
	if kind == v1KindSnapshot {
		copy(h, "CSNP")
	}
	h[4], h[5] = v1Version, kind
	binary.LittleEndian.PutUint64(h[8:], seq)
	binary.LittleEndian.PutUint64(h[16:], uint64(len(body)))
	d := xxhash.New()
	_, _ = d.Write(h[:24])
	_, _ = d.Write(body)
	binary.LittleEndian.PutUint64(h[24:], d.Sum64())
	return append(h, body...)
}

// sampleV1Body is a format 1 body with states, a subscription, a record
// without id (tag 3) and a drop-all (tag 4).
func sampleV1Body() []byte {
	enc := newEncoder(checkpointFormat)
	enc.begin()
	encodeEntries(enc, sampleEntries()[:4])
	b := append([]byte(nil), enc.buf[enc.start+16:]...)
	b = append(b, tagDropRecord)
	b = append(b, tagRecord, 4, 'r', 'e', 'd', 'o')
	return b
}

// v1Expected is what the format 1 engine recovered from testdata/v1
// (expected.json, written by that engine).
type v1Expected struct {
	LastSeq uint64 `json:"lastSeq"`
	Records []string
	States  []struct {
		Partition, Group string
		State            lease.State
	}
	Subscriptions []struct {
		Queue, Group string
		Sub          Subscription
	}
}

func loadV1Expected(t *testing.T) v1Expected {
	t.Helper()
	b, err := os.ReadFile("testdata/v1/expected.json")
	require.NoError(t, err)
	var x v1Expected
	require.NoError(t, json.Unmarshal(b, &x))
	return x
}

// asV1Expected puts an engine's state in the shape of expected.json.
func asV1Expected(t *testing.T, e *Engine, lastSeq uint64) v1Expected {
	t.Helper()
	x := v1Expected{LastSeq: lastSeq}
	e.Range(func(k Key, s lease.State) bool {
		x.States = append(x.States, struct {
			Partition, Group string
			State            lease.State
		}{hex.EncodeToString(k.Partition[:]), k.Group, s})
		return true
	})
	sort.Slice(x.States, func(i, j int) bool {
		a, b := x.States[i], x.States[j]
		return a.Partition < b.Partition || a.Partition == b.Partition && a.Group < b.Group
	})
	e.RangeSubscriptions(func(q, g string, s Subscription) bool {
		x.Subscriptions = append(x.Subscriptions, struct {
			Queue, Group string
			Sub          Subscription
		}{q, g, s})
		return true
	})
	sort.Slice(x.Subscriptions, func(i, j int) bool {
		a, b := x.Subscriptions[i], x.Subscriptions[j]
		return a.Queue+"/"+a.Group < b.Queue+"/"+b.Group
	})
	for _, r := range e.Records() {
		x.Records = append(x.Records, string(r.Data))
	}
	return x
}

// v1Dir returns a strict twin holding testdata/v1 (durable) at /data/cursor.
func v1Dir(t *testing.T) *vfs.Mem {
	t.Helper()
	m := vfs.NewStrictMem("/data")
	ents, err := os.ReadDir("testdata/v1")
	require.NoError(t, err)
	for _, ent := range ents {
		if filepath.Ext(ent.Name()) == ".json" {
			continue
		}
		b, err := os.ReadFile(filepath.Join("testdata/v1", ent.Name()))
		require.NoError(t, err)
		m.SetBytes("/data/cursor/"+ent.Name(), b)
	}
	return m
}

func names(t *testing.T, fsys vfs.FS, dir string) []string {
	t.Helper()
	l, err := fsys.List(dir)
	require.NoError(t, err)
	return l
}

func TestUpgradeOpensAFormat1Directory(t *testing.T) {
	want := loadV1Expected(t)
	m := v1Dir(t)
	e, rep, err := Open("/data/cursor", Options{FS: m})
	require.NoError(t, err)
	assert.True(t, rep.Upgraded, "issue 10: an existing v1 directory opens and is upgraded in place")
	assert.Equal(t, want.LastSeq, rep.LastSeq)
	assert.Equal(t, snapshotName(want.LastSeq), rep.SnapshotLoaded, "the upgrade is a format 2 snapshot of the last checkpoint")
	assert.Equal(t, want, asV1Expected(t, e, rep.LastSeq), "the format 2 engine holds exactly what the format 1 engine recovered")
	assert.Equal(t, []string{journalName(want.LastSeq + 1), snapshotName(want.LastSeq)}, names(t, m, "/data/cursor"), "the format 1 files are retired")

	e.Set(Key{pid(200), "after"}, lease.State{Committed: 3})
	require.NoError(t, e.Wait())
	c := m.Crash(false)
	e2, rep2, err := Open("/data/cursor", Options{FS: c})
	require.NoError(t, err)
	defer e2.Close()
	assert.False(t, rep2.Upgraded)
	s, _ := e2.Get(Key{pid(200), "after"})
	assert.Equal(t, uint64(3), s.Committed, "the upgraded directory takes checkpoints")
	assert.Equal(t, len(want.States)+1, e2.Len())
}

func TestUpgradeSkipsATornFormat1Checkpoint(t *testing.T) {
	want := loadV1Expected(t)
	m := v1Dir(t)
	path := "/data/cursor/" + v1JournalName(want.LastSeq)
	b := m.Bytes(path)
	end := nonZeroLen(b)
	torn := v1Frame(v1KindCheckpoint, want.LastSeq+1, sampleV1Body())
	m.SetBytes(path, append(b[:end], torn[:len(torn)-3]...))
	e, rep, err := Open("/data/cursor", Options{FS: m})
	require.NoError(t, err)
	defer e.Close()
	assert.True(t, rep.Upgraded)
	assert.Equal(t, want, asV1Expected(t, e, rep.LastSeq), "format 1 rule: a torn last checkpoint was never acknowledged")
}

func TestUpgradeRefusesDamagedFormat1Files(t *testing.T) {
	m := v1Dir(t)
	want := loadV1Expected(t)
	path := "/data/cursor/" + v1SnapshotName(want.LastSeq-1)
	b := m.Bytes(path)
	b[100] ^= 1
	m.SetBytes(path, b)
	_, _, err := Open("/data/cursor", Options{FS: m})
	var ce *CorruptionError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, path, ce.File)
	assert.Equal(t, []string{v1JournalName(want.LastSeq), v1SnapshotName(want.LastSeq - 1)}, names(t, m, "/data/cursor"), "nothing changed")
}

// Every write, sync, rename, removal and directory sync of the upgrade fails
// in turn, and the machine crashes right after: the next Open recovers the
// same state, from the format 1 files or from the format 2 snapshot.
func TestUpgradeIsCrashSafeAtEveryBoundary(t *testing.T) {
	want := loadV1Expected(t)
	rec := vfs.NewFaulty(v1Dir(t))
	rec.Record()
	e, _, err := Open("/data/cursor", Options{FS: rec})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	trace := rec.Trace()
	walked := 0
	for i, c := range trace {
		if c.Op == vfs.OpRead {
			continue
		}
		walked++
		m := v1Dir(t)
		f := vfs.NewFaulty(m)
		f.Inject(vfs.FaultAt(trace, i, nil))
		if e, _, err := Open("/data/cursor", Options{FS: f}); err == nil {
			require.NoError(t, e.Close())
		}
		e, rep, err := Open("/data/cursor", Options{FS: m.Crash(false)})
		require.NoErrorf(t, err, "crash after a failed %s %s", c.Op, c.Path)
		assert.Equalf(t, want, asV1Expected(t, e, rep.LastSeq), "crash after a failed %s %s", c.Op, c.Path)
		require.NoError(t, e.Close())
	}
	assert.Greater(t, walked, 8, "the walk covers the snapshot's write, sync, rename, the removals and the directory syncs")
}

func TestUpgradeLeftoversAreRemoved(t *testing.T) {
	want := loadV1Expected(t)
	m := v1Dir(t)
	e, _, err := Open("/data/cursor", Options{FS: m})
	require.NoError(t, err)
	require.NoError(t, e.Close())
	// A crash after the format 2 snapshot, before the format 1 files went.
	for _, name := range []string{v1JournalName(want.LastSeq), v1SnapshotName(want.LastSeq - 1)} {
		b, err := os.ReadFile(filepath.Join("testdata/v1", name))
		require.NoError(t, err)
		m.SetBytes("/data/cursor/"+name, b)
	}
	e, rep, err := Open("/data/cursor", Options{FS: m})
	require.NoError(t, err)
	defer e.Close()
	assert.False(t, rep.Upgraded, "the format 2 snapshot wins")
	assert.Equal(t, want.States, asV1Expected(t, e, rep.LastSeq).States)
	assert.NotContains(t, names(t, m, "/data/cursor"), v1JournalName(want.LastSeq))
}
