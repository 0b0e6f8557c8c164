package cursor

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/lease"
	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
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

// sampleV1Body is a format 1 body with states, a subscription, a drop-all
// (tag 4) and a record without id (tag 3).
func sampleV1Body() []byte {
	enc := newEncoder(nil)
	enc.begin()
	encodeEntries(enc, sampleEntries()[:4])
	b := append([]byte(nil), enc.body()...)
	b = append(b, tagDropRecord)
	return append(b, tagRecord, 4, 'r', 'e', 'd', 'o')
}

// oldDir is a directory written by the format 1 or 2 engine (testdata/v1,
// testdata/v2) and the state that engine recovered from it (expected.json,
// written by that engine).
type oldDir struct {
	format int
	path   string // testdata/v<format>
	want   oldExpected
}

type oldExpected struct {
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

func oldDirs(t *testing.T) []oldDir {
	t.Helper()
	var out []oldDir
	for _, format := range []int{1, 2} {
		d := oldDir{format: format, path: fmt.Sprintf("testdata/v%d", format)}
		b, err := os.ReadFile(filepath.Join(d.path, "expected.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &d.want))
		out = append(out, d)
	}
	return out
}

// fsys returns a strict twin holding the directory (durable) at /data/cursor.
func (d oldDir) fsys(t *testing.T) *vfs.Mem {
	t.Helper()
	m := vfs.NewStrictMem("/data")
	for _, name := range d.files(t) {
		b, err := os.ReadFile(filepath.Join(d.path, name))
		require.NoError(t, err)
		m.SetBytes("/data/cursor/"+name, b)
	}
	return m
}

// files lists the directory's journal and snapshot files.
func (d oldDir) files(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(d.path)
	require.NoError(t, err)
	var out []string
	for _, ent := range ents {
		if filepath.Ext(ent.Name()) != ".json" {
			out = append(out, ent.Name())
		}
	}
	return out
}

// newestJournal is the path of the directory's newest journal on /data/cursor.
func (d oldDir) newestJournal(t *testing.T) string {
	t.Helper()
	files := d.files(t)
	for i := len(files) - 1; i >= 0; i-- {
		if files[i][:8] == "journal-" {
			return "/data/cursor/" + files[i]
		}
	}
	t.Fatal("no journal")
	return ""
}

// asExpected puts an engine's state and legacy records in the shape of
// expected.json.
func asExpected(e *Engine, lastSeq uint64, legacy [][]byte) oldExpected {
	x := oldExpected{LastSeq: lastSeq}
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
	for _, r := range legacy {
		x.Records = append(x.Records, string(r))
	}
	return x
}

func names(t *testing.T, fsys vfs.FS, dir string) []string {
	t.Helper()
	l, err := fsys.List(dir)
	require.NoError(t, err)
	return l
}

func TestUpgradeOpensAnOldDirectory(t *testing.T) {
	for _, d := range oldDirs(t) {
		t.Run(fmt.Sprintf("issue 14: a format %d directory", d.format), func(t *testing.T) {
			m := d.fsys(t)
			log := newMemLog(1, nil)
			e, rep, err := Open("/data/cursor", Options{FS: m, Log: log})
			require.NoError(t, err)
			assert.True(t, rep.Upgraded)
			assert.Equal(t, d.format, rep.UpgradedFrom)
			assert.Equal(t, d.want.LastSeq, rep.LastSeq)
			assert.Equal(t, uint64(1), rep.ReplayFrom, "the commit log holds nothing older than the upgrade")
			assert.Equal(t, snapshotName(1), rep.SnapshotLoaded, "the upgrade is one format 3 snapshot")
			assert.Equal(t, d.want, asExpected(e, rep.LastSeq, rep.LegacyRecords),
				"the engine holds exactly what the old engine recovered, its redo records handed out as legacy records")
			assert.Equal(t, []string{snapshotName(1)}, names(t, m, "/data/cursor"), "the old files are retired")

			e.Start()
			e.Set(Key{pid(200), "after"}, lease.State{Committed: 3})
			require.NoError(t, e.Wait())
			e2, _, rep2 := recoverT(t, m.Crash(false), "/data/cursor", log.crash(nil))
			assert.False(t, rep2.Upgraded)
			assert.Equal(t, d.want.Records, asExpected(e2, 0, rep2.LegacyRecords).Records, "the legacy records are handed out until forgotten")
			s, _ := e2.Get(Key{pid(200), "after"})
			assert.Equal(t, uint64(3), s.Committed, "the upgraded directory takes checkpoints")
			assert.Equal(t, len(d.want.States)+1, e2.Len())
			require.NoError(t, e.Close())
		})
	}
}

// TestLegacyRecordsStayUntilForgotten: a snapshot carries the legacy records
// until ForgetLegacyRecords, so a crash before the broker made their effects
// durable hands them out again.
func TestLegacyRecordsStayUntilForgotten(t *testing.T) {
	d := oldDirs(t)[1]
	m := d.fsys(t)
	e, _, err := Open("/data/cursor", Options{FS: m, Log: newMemLog(1, nil)})
	require.NoError(t, err)
	e.Start()
	_, err = e.Snapshot()
	require.NoError(t, err)
	_, _, rep := recoverT(t, m.Crash(false), "/data/cursor", nil)
	assert.Equal(t, d.want.Records, asExpected(e, 0, rep.LegacyRecords).Records, "a snapshot before ForgetLegacyRecords keeps them")

	e.ForgetLegacyRecords()
	_, err = e.Snapshot()
	require.NoError(t, err)
	_, _, rep = recoverT(t, m.Crash(false), "/data/cursor", nil)
	assert.Nil(t, rep.LegacyRecords, "forgotten once applied")
	require.NoError(t, e.Close())
}

func TestUpgradeSkipsATornCheckpoint(t *testing.T) {
	for _, d := range oldDirs(t) {
		t.Run(fmt.Sprintf("format %d rule: a torn last checkpoint was never acknowledged", d.format), func(t *testing.T) {
			m := d.fsys(t)
			path := d.newestJournal(t)
			b := m.Bytes(path)
			b = b[:nonZeroLen(b)]
			torn := v1Frame(v1KindCheckpoint, d.want.LastSeq+1, sampleV1Body())
			if d.format == 2 {
				torn = v2CheckpointFrame(d.want.LastSeq+1, sampleV2Entries())
			}
			m.SetBytes(path, append(b, torn[:len(torn)-3]...))
			e, rep, err := Open("/data/cursor", Options{FS: m})
			require.NoError(t, err)
			defer e.Close()
			assert.True(t, rep.Upgraded)
			assert.Equal(t, d.want, asExpected(e, rep.LastSeq, rep.LegacyRecords))
		})
	}
}

func TestUpgradeRefusesDamagedFiles(t *testing.T) {
	for _, d := range oldDirs(t) {
		for _, name := range d.files(t) {
			if d.format == 1 && name[:8] == "journal-" {
				continue // its only checkpoint is the last: damage there is a torn tail (above)
			}
			t.Run(fmt.Sprintf("format %d: a flipped byte inside %s", d.format, name), func(t *testing.T) {
				m := d.fsys(t)
				path := "/data/cursor/" + name
				b := m.Bytes(path)
				b[40] ^= 1
				m.SetBytes(path, b)
				_, _, err := Open("/data/cursor", Options{FS: m})
				var ce *CorruptionError
				require.ErrorAs(t, err, &ce, "damage with valid data after it is not a torn tail")
				assert.Equal(t, path, ce.File)
				assert.Equal(t, d.files(t), names(t, m, "/data/cursor"), "nothing changed")
			})
		}
	}
}

// Every write, sync, rename, removal and directory sync of the upgrade fails
// in turn, and the machine crashes right after: the next Open recovers the
// same state and legacy records, from the old files or from the snapshot.
func TestUpgradeIsCrashSafeAtEveryBoundary(t *testing.T) {
	for _, d := range oldDirs(t) {
		t.Run(fmt.Sprintf("format %d", d.format), func(t *testing.T) {
			rec := errorfs.New(d.fsys(t))
			rec.Record()
			e, _, err := Open("/data/cursor", Options{FS: rec})
			require.NoError(t, err)
			require.NoError(t, e.Close())
			trace := rec.Trace()
			walked := 0
			for i, c := range trace {
				if c.Op == errorfs.OpRead {
					continue
				}
				walked++
				m := d.fsys(t)
				f := errorfs.New(m)
				f.Inject(errorfs.FaultAt(trace, i, nil))
				if e, _, err := Open("/data/cursor", Options{FS: f}); err == nil {
					require.NoError(t, e.Close())
				}
				e, rep, err := Open("/data/cursor", Options{FS: m.Crash(false)})
				require.NoErrorf(t, err, "crash after a failed %s %s", c.Op, c.Path)
				got := asExpected(e, d.want.LastSeq, rep.LegacyRecords)
				assert.Equalf(t, d.want, got, "crash after a failed %s %s", c.Op, c.Path)
				require.NoError(t, e.Close())
			}
			assert.Greater(t, walked, 6, "the walk covers the snapshot's write, sync, rename, the removals and the directory syncs")
		})
	}
}

func TestUpgradeLeftoversAreRemoved(t *testing.T) {
	for _, d := range oldDirs(t) {
		t.Run(fmt.Sprintf("format %d", d.format), func(t *testing.T) {
			m := d.fsys(t)
			e, _, err := Open("/data/cursor", Options{FS: m})
			require.NoError(t, err)
			require.NoError(t, e.Close())
			// A crash after the format 3 snapshot, before the old files went.
			for _, name := range d.files(t) {
				b, err := os.ReadFile(filepath.Join(d.path, name))
				require.NoError(t, err)
				m.SetBytes("/data/cursor/"+name, b)
			}
			e, rep, err := Open("/data/cursor", Options{FS: m})
			require.NoError(t, err)
			defer e.Close()
			assert.False(t, rep.Upgraded, "the format 3 snapshot wins")
			assert.Equal(t, d.want, asExpected(e, d.want.LastSeq, rep.LegacyRecords))
			assert.Equal(t, []string{snapshotName(1)}, names(t, m, "/data/cursor"))
		})
	}
}
