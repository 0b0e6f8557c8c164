//go:build crash

package crashtest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The damage tests (issue 5) run the real binary on a stopped data directory that
// was written by a real server and then damaged the way disks and operators do.

const damageQueue = "dmg"

func pushN(t *testing.T, a *api, partition string, first, n, perPush int, payload func(i int) any) []string {
	t.Helper()
	var txids []string
	for i := first; i < first+n; i += perPush {
		var items []pushItem
		for j := i; j < min(first+n, i+perPush); j++ {
			tx := fmt.Sprintf("%s-%d", partition, j)
			b, err := json.Marshal(payload(j))
			require.NoError(t, err)
			items = append(items, pushItem{Queue: damageQueue, Partition: partition, TransactionID: tx, Payload: b})
			txids = append(txids, tx)
		}
		st, res, err := a.push(context.Background(), items)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, st)
		for _, r := range res {
			require.Equal(t, "queued", r.Status)
		}
	}
	return txids
}

// popAll drains with autoAck: group "" is queue mode; partition "" is a wildcard pop.
func popAll(t *testing.T, a *api, group, partition string) (msgs []popMessage, status int) {
	t.Helper()
	q := url.Values{}
	q.Set("batch", "1000")
	q.Set("partitions", "100")
	q.Set("autoAck", "true")
	if group != "" {
		q.Set("consumerGroup", group)
	}
	path := "/api/v1/pop/queue/" + damageQueue
	if partition != "" {
		path += "/partition/" + url.PathEscape(partition)
	}
	for range 10000 {
		st, b, err := a.do(context.Background(), http.MethodGet, path+"?"+q.Encode(), nil)
		require.NoError(t, err)
		if st != http.StatusOK {
			return msgs, st
		}
		var ans popAnswer
		require.NoError(t, json.Unmarshal(b, &ans))
		msgs = append(msgs, ans.Messages...)
	}
	t.Fatal("popAll did not finish")
	return nil, 0
}

func fsckJSONRun(t *testing.T, args ...string) (int, fsckJSON, string) {
	t.Helper()
	code, out, errOut := runComb(t, 2*time.Minute, append([]string{"fsck", "--json"}, args...)...)
	var rep fsckJSON
	if code <= 2 {
		require.NoErrorf(t, json.Unmarshal([]byte(out), &rep), "fsck --json: %s %s", out, errOut)
	}
	return code, rep, out + errOut
}

// segFilesByMtime lists every *.seg under dir, oldest modification first.
func segFilesByMtime(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	require.NoError(t, filepath.WalkDir(filepath.Join(dir, "partitions"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".seg") {
			files = append(files, p)
		}
		return err
	}))
	sort.Slice(files, func(i, j int) bool {
		a, _ := os.Stat(files[i])
		b, _ := os.Stat(files[j])
		return a.ModTime().Before(b.ModTime())
	})
	return files
}

func appendTo(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestCrashDamageGarbageTail: zero bytes and garbage after the last segment of a
// clean stop lie past what meta/clean records as synced (never acknowledged):
// fsck reports them as an unsynced tail the server cuts (repairable, exit 1,
// as a torn tail was before issue 21's synced-length rule), and a server
// started without --repair cuts them itself and serves every message.
func TestCrashDamageGarbageTail(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	srv := newServer(t, data)
	require.NoError(t, srv.start(30*time.Second))
	defer srv.kill()
	a := newAPI(srv.url(), 4)
	for p := 0; p < 5; p++ {
		pushN(t, a, fmt.Sprintf("p%d", p), 0, 100, 25, func(i int) any { return map[string]int{"i": i} })
	}
	require.NoError(t, srv.stop(30*time.Second))

	segs := segFilesByMtime(t, data)
	require.NotEmpty(t, segs)
	garbage := make([]byte, 91)
	_, _ = rand.Read(garbage)
	appendTo(t, segs[len(segs)-1], append(make([]byte, 37), garbage...))

	code, rep, out := fsckJSONRun(t, data)
	assert.Equal(t, 1, code, out)
	require.Len(t, rep.Findings, 1, out)
	assert.Equal(t, "unsynced_tail", rep.Findings[0].Kind)
	assert.Contains(t, rep.Findings[0].Detail, "128 bytes written unsynced past offset 100 that no commit-log entry holds (never acknowledged): the server cuts them at start")

	require.NoError(t, srv.start(30*time.Second))
	a = newAPI(srv.url(), 4)
	msgs, st := popAll(t, a, "", "")
	assert.Equal(t, http.StatusNoContent, st)
	assert.Len(t, msgs, 500, "every message is served after the automatic truncation")
	require.NoError(t, srv.stop(30*time.Second))
	code, _, out = fsckJSONRun(t, data)
	assert.Equal(t, 0, code, "the server's own recovery cut the tail: %s", out)
}

// TestCrashDamageCutBelowSynced (issue 21 item 4): after a clean stop every
// segment is recorded as synced, so an active segment file cut by one byte is
// damage, not a torn tail: fsck exits 2 with a short_file finding naming the
// file and the byte range, the server serves the other partitions and takes
// this one out of service (/health degraded, naming it), and the file is kept
// as it is, across restarts.
func TestCrashDamageCutBelowSynced(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	srv := newServer(t, data)
	require.NoError(t, srv.start(30*time.Second))
	defer srv.kill()
	a := newAPI(srv.url(), 4)
	for p := 0; p < 5; p++ {
		pushN(t, a, fmt.Sprintf("p%d", p), 0, 100, 25, func(i int) any { return map[string]int{"i": i} })
	}
	require.NoError(t, srv.stop(30*time.Second))

	segs := segFilesByMtime(t, data)
	seg := segs[len(segs)-1]
	st, err := os.Stat(seg)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(seg, st.Size()-1))
	rel, err := filepath.Rel(data, seg)
	require.NoError(t, err)

	code, rep, out := fsckJSONRun(t, data)
	assert.Equal(t, 2, code, out)
	require.Len(t, rep.Findings, 1, out)
	f := rep.Findings[0]
	assert.Equal(t, "short_file", f.Kind)
	assert.Equal(t, "damaged", f.Severity)
	assert.Equal(t, rel, f.File)
	assert.Equal(t, st.Size()-1, f.EndByte)
	assert.Less(t, f.StartByte, f.EndByte)
	assert.Equal(t, [2]uint64{76, 100}, [2]uint64{f.FirstOffset, f.LastOffset})
	assert.Contains(t, f.Detail, "a crash cannot make a synced file shorter, so this is damage, not a torn tail")

	require.NoError(t, srv.start(30*time.Second))
	a = newAPI(srv.url(), 4)
	msgs, _ := popAll(t, a, "", "")
	assert.Len(t, msgs, 400, "the other partitions serve")
	code2, body, err := a.do(context.Background(), http.MethodGet, "/health", nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code2)
	var h struct {
		Status  string `json:"status"`
		Damaged []struct {
			File      string `json:"file"`
			StartByte int64  `json:"startByte"`
			EndByte   int64  `json:"endByte"`
		} `json:"damaged"`
	}
	require.NoError(t, json.Unmarshal(body, &h))
	assert.Equal(t, "degraded", h.Status)
	require.Len(t, h.Damaged, 1, string(body))
	assert.Equal(t, filepath.Base(seg), h.Damaged[0].File)
	assert.Equal(t, [2]int64{f.StartByte, f.EndByte}, [2]int64{h.Damaged[0].StartByte, h.Damaged[0].EndByte})
	require.NoError(t, srv.stop(30*time.Second))

	st2, err := os.Stat(seg)
	require.NoError(t, err)
	assert.Equal(t, st.Size()-1, st2.Size(), "the damaged file is kept as it is")
	code, _, out = fsckJSONRun(t, data)
	assert.Equal(t, 2, code, "a restart and a clean stop do not hide the damage: %s", out)
}

// TestCrashDamageFlippedBitSealed: a flipped bit in a sealed segment file is reported
// with its exact file and byte range, and the server never serves the partition
// with the damaged range silently skipped.
func TestCrashDamageFlippedBitSealed(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	srv := newServer(t, data)
	require.NoError(t, srv.start(30*time.Second))
	defer srv.kill()
	a := newAPI(srv.url(), 4)
	// ~96 MiB of barely compressible payloads: more than one 64 MiB segment file.
	chunk := make([]byte, 768<<10)
	big := pushN(t, a, "big", 0, 128, 1, func(i int) any {
		_, _ = rand.Read(chunk)
		return map[string]any{"i": i, "blob": base64.StdEncoding.EncodeToString(chunk)}
	})
	pushN(t, a, "small", 0, 10, 5, func(i int) any { return i })
	require.NoError(t, srv.stop(30*time.Second))

	var sealed string
	for _, s := range segFilesByMtime(t, data) {
		files, _ := filepath.Glob(filepath.Join(filepath.Dir(s), "*.seg"))
		if len(files) >= 2 {
			sort.Strings(files)
			sealed = files[0]
			break
		}
	}
	require.NotEmpty(t, sealed, "a partition with a sealed file")
	st, err := os.Stat(sealed)
	require.NoError(t, err)
	flipAt := st.Size() / 2
	flipBitAt(t, sealed, flipAt)

	code, rep, out := fsckJSONRun(t, data)
	assert.Equal(t, 2, code, out)
	var hit bool
	for _, f := range rep.Findings {
		if f.Kind == "corrupt_segment" {
			hit = true
			assert.Equal(t, filepath.Base(sealed), filepath.Base(f.File))
			assert.LessOrEqual(t, f.StartByte, flipAt)
			assert.Greater(t, f.EndByte, flipAt)
			assert.Less(t, f.EndByte-f.StartByte, int64(2<<20), "the range is one ~1 MiB segment, not the 64 MiB file")
			assert.NotZero(t, f.FirstOffset)
			assert.Equal(t, "damaged", f.Severity)
		}
	}
	assert.True(t, hit, out)

	// The server must refuse (not start, or fail that partition) or serve only up to
	// the damage; it must never deliver messages after the damaged range while the
	// range itself is missing.
	if err := srv.start(30 * time.Second); err != nil {
		t.Logf("server refused the damaged directory: %v", err)
		return
	}
	a = newAPI(srv.url(), 4)
	msgs, status := popAll(t, a, "", "big")
	t.Logf("server started; pop of the damaged partition delivered %d of %d messages, then answered %d", len(msgs), len(big), status)
	got := map[string]bool{}
	for _, m := range msgs {
		got[m.TransactionID] = true
	}
	firstMissing := -1
	for i, tx := range big {
		if !got[tx] && firstMissing < 0 {
			firstMissing = i
		}
		if got[tx] && firstMissing >= 0 {
			t.Fatalf("message %s delivered after %s was skipped: the damaged middle was dropped silently", tx, big[firstMissing])
		}
	}
	assert.NotEqual(t, -1, firstMissing, "the damaged range cannot have been delivered")
}

func flipBitAt(t *testing.T, path string, at int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	b := []byte{0}
	_, err = f.ReadAt(b, at)
	require.NoError(t, err)
	b[0] ^= 0x04
	_, err = f.WriteAt(b, at)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestCrashDamageIndex: a deleted or truncated index is rebuilt by the next start,
// and only that file changes.
func TestCrashDamageIndex(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(path string) error
		kind   string
	}{
		{"deleted index", os.Remove, "index_missing"},
		{"truncated index", func(p string) error { return os.Truncate(p, 40) }, "index_stale"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			srv := newServer(t, data)
			require.NoError(t, srv.start(30*time.Second))
			defer srv.kill()
			a := newAPI(srv.url(), 4)
			for p := 0; p < 3; p++ {
				pushN(t, a, fmt.Sprintf("p%d", p), 0, 200, 10, func(i int) any { return map[string]int{"i": i} })
			}
			require.NoError(t, srv.stop(30*time.Second))

			segs := segFilesByMtime(t, data)
			victim := strings.TrimSuffix(segs[0], ".seg") + ".idx"
			before := snapshotFiles(t, filepath.Join(data, "partitions"))
			require.NoError(t, tc.damage(victim))

			code, rep, out := fsckJSONRun(t, data)
			assert.Equal(t, 1, code, out)
			require.Len(t, rep.Findings, 1, out)
			assert.Equal(t, tc.kind, rep.Findings[0].Kind)

			require.NoError(t, srv.start(30*time.Second))
			a = newAPI(srv.url(), 4)
			msgs, _ := popAll(t, a, "", "")
			assert.Len(t, msgs, 600)
			require.NoError(t, srv.stop(30*time.Second))

			after := snapshotFiles(t, filepath.Join(data, "partitions"))
			for name, b := range before {
				if name == victim || strings.HasSuffix(name, "dedup.idx") {
					continue // the victim is rebuilt; dedup.idx is a cache pops may extend
				}
				assert.Equalf(t, b, after[name], "%s unchanged", name)
			}
			assert.Contains(t, after, victim, "the index is back")
			code, _, out = fsckJSONRun(t, data)
			assert.Equal(t, 0, code, out)
		})
	}
}

// TestCrashDamageCursorAhead: a partition directory restored from an older copy
// under a newer meta/clean (and cursor snapshot) holds fewer offsets than were
// synced: since issue 21 that is damage, not a crash's torn tail, so fsck
// reports the missing offsets (exit 2), the server takes the partition out of
// service and leaves its cursor where it was (no clamp on the strength of a
// log that is missing synced data), and the restored files are kept as they
// are. (Before, the server clamped the cursor and served the older files.)
func TestCrashDamageCursorAhead(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	srv := newServer(t, data)
	require.NoError(t, srv.start(30*time.Second))
	defer srv.kill()
	a := newAPI(srv.url(), 4)
	pushN(t, a, "p", 0, 40, 10, func(i int) any { return i })
	require.NoError(t, srv.stop(30*time.Second))
	old := filepath.Join(t.TempDir(), "partitions-copy")
	require.NoError(t, os.CopyFS(old, os.DirFS(filepath.Join(data, "partitions"))))

	require.NoError(t, srv.start(30*time.Second))
	a = newAPI(srv.url(), 4)
	pushN(t, a, "p", 40, 60, 10, func(i int) any { return i })
	msgs, _ := popAll(t, a, "g", "")
	require.Len(t, msgs, 100, "group g consumed everything: its cursor is at 100")
	require.NoError(t, srv.stop(30*time.Second))

	// Restore the older partition data under the newer summaries and cursors.
	require.NoError(t, os.RemoveAll(filepath.Join(data, "partitions")))
	require.NoError(t, os.CopyFS(filepath.Join(data, "partitions"), os.DirFS(old)))
	restored := snapshotFiles(t, filepath.Join(data, "partitions"))

	code, rep, out := fsckJSONRun(t, data)
	assert.Equal(t, 2, code, out)
	var missing int
	for _, f := range rep.Findings {
		if f.Kind == "missing_offsets" && f.Severity == "damaged" {
			missing++
			assert.Equal(t, [2]uint64{41, 100}, [2]uint64{f.FirstOffset, f.LastOffset}, out)
		}
	}
	assert.Equal(t, 1, missing, out)

	require.NoError(t, srv.start(30*time.Second))
	a = newAPI(srv.url(), 4)
	var items []pushItem
	for _, tx := range []string{"fresh-0", "fresh-1"} {
		items = append(items, pushItem{Queue: damageQueue, Partition: "p", TransactionID: tx, Payload: json.RawMessage(`{"fresh":true}`)})
	}
	st, _, err := a.push(context.Background(), items)
	require.NoError(t, err)
	assert.Equal(t, http.StatusInternalServerError, st, "the partition is out of service")
	require.NoError(t, srv.stop(30*time.Second))
	assert.Equal(t, restored, snapshotFiles(t, filepath.Join(data, "partitions")), "the restored files are kept as they are")
}

// snapshotFiles maps every file under dir to its bytes.
func snapshotFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = b
		return err
	}))
	return out
}

// TestCrashReplayIntoSecondServer: `comb replay` moves a stopped server's messages
// into a running one, in per-partition order, and a second run (resume state, then
// no state at all) adds nothing (issue 5 "comb replay").
func TestCrashReplayIntoSecondServer(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	a := newServer(t, src)
	require.NoError(t, a.start(30*time.Second))
	defer a.kill()
	api1 := newAPI(a.url(), 4)
	want := map[string][]string{}
	for p := 0; p < 3; p++ {
		part := fmt.Sprintf("p%d", p)
		want[part] = pushN(t, api1, part, 0, 200, 30, func(i int) any { return map[string]int{"i": i} })
	}
	require.NoError(t, a.stop(30*time.Second))

	b := newServer(t, filepath.Join(t.TempDir(), "dst"))
	require.NoError(t, b.start(30*time.Second))
	defer b.kill()
	state := filepath.Join(t.TempDir(), "replay.json")
	code, _, errOut := runComb(t, time.Minute, "replay", "--target", b.url(), "--data-dir", src, "--state", state, "--batch", "50")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "600 pushed")

	api2 := newAPI(b.url(), 4)
	msgs, _ := popAll(t, api2, "", "")
	got := map[string][]string{}
	for _, m := range msgs {
		got[m.Partition] = append(got[m.Partition], m.TransactionID)
	}
	assert.Equal(t, want, got, "every message once, per-partition order kept, transactionIds kept")

	code, _, errOut = runComb(t, time.Minute, "replay", "--target", b.url(), "--data-dir", src, "--state", state)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "0 pushed, 0 already there (duplicates), 600 skipped")
	code, _, errOut = runComb(t, time.Minute, "replay", "--target", b.url(), "--data-dir", src)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "0 pushed, 600 already there")
}
