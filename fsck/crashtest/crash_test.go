//go:build crash

package crashtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/combmq/comb/fsck"
	"github.com/stretchr/testify/require"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

// fsckJSON is the part of `comb fsck --json` the harness reads.
type fsckJSON struct {
	ExitCode int `json:"exitCode"`
	Findings []struct {
		Kind        string `json:"kind"`
		Severity    string `json:"severity"`
		Detail      string `json:"detail"`
		File        string `json:"file"`
		StartByte   int64  `json:"startByte"`
		EndByte     int64  `json:"endByte"`
		FirstOffset uint64 `json:"firstOffset"`
		LastOffset  uint64 `json:"lastOffset"`
	} `json:"findings"`
}

// afterKillKinds are the findings a kill -9 may leave behind: the next start repairs them
// (issue 14: a batch of the commit log torn mid-write, never acknowledged) or recovers them
// (the unsynced tails of logs written behind the commit log, replayed from it: info).
var afterKillKinds = map[string]bool{
	"torn_tail":                        true,
	"index_missing":                    true,
	"index_stale":                      true,
	"dedup_stale":                      true,
	"journal_torn_tail":                true,
	string(fsck.KindCommitLogTornTail): true,
	string(fsck.KindUnsyncedTail):      true,
	// A note appended when the kill came (notes.Open cuts it at start), and a
	// DESCRIPTOR whose write it cut (start-up writes it again while the commit
	// log holds the partition's creation).
	string(fsck.KindNotesTornTail):     true,
	string(fsck.KindDescriptorDamaged): true,
}

type crashFigures struct {
	kills, recoveryKills, resent, drains, drainedMsgs int
	fullDrains, checkedMsgs                           int
	fsckClean, fsckRepairable                         int
	sinkMsgs                                          int
	fsckKinds                                         map[string]int
}

// TestCrashKill9 is the kill -9 harness (issue 5): CRASH_KILLS kills of a live server
// under concurrent pushes, pops and acks, each followed by fsck, a restart and a full
// verification of what every 201 and every successful ack promised.
func TestCrashKill9(t *testing.T) {
	kills := envInt("CRASH_KILLS", 5)
	seed := uint64(envInt("CRASH_SEED", int(time.Now().UnixNano()%1_000_000_007)))
	pushers := envInt("CRASH_PUSHERS", 16)
	consumers := envInt("CRASH_CONSUMERS", 8)
	streamsConsumers := envInt("CRASH_STREAMS_CONSUMERS", 2)
	maxRun := time.Duration(envInt("CRASH_MAX_RUN_MS", 1500)) * time.Millisecond
	t.Logf("CRASH_SEED=%d CRASH_KILLS=%d pushers=%d consumers=%d", seed, kills, pushers, consumers)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))

	data := filepath.Join(t.TempDir(), "data")
	// CRASH_FLUSH_MS, when set, shortens the flush pass (partition syncs, stream state
	// snapshots, commit-log truncation) so kills also land around it; unset: the server's default.
	var extra []string
	if ms := envInt("CRASH_FLUSH_MS", 0); ms > 0 {
		extra = append(extra, "--flush-interval", strconv.Itoa(ms)+"ms")
	}
	// CRASH_MAX_OPEN_FILES, when set, shrinks the handle cache so that partition logs are
	// released (closed with unsynced appends) and loaded again all the time.
	if n := envInt("CRASH_MAX_OPEN_FILES", 0); n > 0 {
		extra = append(extra, "--max-open-files", strconv.Itoa(n))
	}
	srv := newServer(t, data, extra...)
	led := newLedger()
	sl := newStreamsLedger(led)
	fig := crashFigures{fsckKinds: map[string]int{}}
	seqs := make([]int, pushers)
	partitions := []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"}
	started := time.Now()
	var runStarts []time.Time // wall clock at the start of each run, by epoch
	defer srv.kill()

	failNow := func(stage string) {
		t.Helper()
		led.mu.Lock()
		v := append([]string(nil), led.violations...)
		led.mu.Unlock()
		if len(v) > 0 {
			t.Fatalf("%s: %d violation(s) (seed %d, data %s, server log %s):\n  %s", stage, len(v), seed, data, srv.logPath, strings.Join(v, "\n  "))
		}
	}

	for epoch := 0; ; epoch++ {
		require.NoErrorf(t, srv.start(60*time.Second), "start %d", epoch)
		a := newAPI(srv.url(), pushers+consumers+4)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)

		n, err := resend(ctx, a, led)
		require.NoErrorf(t, err, "epoch %d", epoch)
		fig.resent += n
		qid, err := registerStreams(ctx, a)
		require.NoErrorf(t, err, "epoch %d: register the streams query", epoch)

		if epoch > 0 {
			// Every tenth restart and the last one drain everything from the start;
			// the others drain from the start of the run that was just killed (a
			// timestamp subscription), so the harness stays linear in the kills.
			var since time.Time
			if epoch%10 != 0 && epoch != kills {
				since = runStarts[epoch-1].Add(-50 * time.Millisecond)
			} else {
				fig.fullDrains++
			}
			group := fmt.Sprintf("verify-%d", epoch)
			msgs, err := drain(ctx, a, group, since)
			require.NoErrorf(t, err, "epoch %d drain", epoch)
			rep := led.verifyDrain(msgs, since)
			fig.drains++
			fig.drainedMsgs += rep.messages
			fig.checkedMsgs += rep.checked
			bad, err := a.negativeLags(ctx, workGroup, group)
			require.NoErrorf(t, err, "epoch %d consumer-groups", epoch)
			for _, b := range bad {
				led.violate("after restart %d: cursor past its high-water mark: %s", epoch, b)
			}
			st, _, err := a.do(ctx, http.MethodDelete, "/api/v1/consumer-groups/"+url.PathEscape(group)+"?deleteMetadata=true", nil)
			if err != nil || st != http.StatusOK {
				t.Logf("epoch %d: deleting group %s: %d %v", epoch, group, st, err)
			}
			sinkN, err := verifyStreams(ctx, a, sl, qid, epoch, false)
			require.NoErrorf(t, err, "epoch %d streams verification", epoch)
			fig.sinkMsgs = sinkN
			failNow(fmt.Sprintf("after kill %d", epoch))
		}
		cancel()
		if epoch == kills {
			// The streams consumers fold what is left of the source; then every stored
			// source message must be in exactly one sink span.
			sw := &streamsWork{api: a, sl: sl, qid: qid, epoch: epoch, seed: seed}
			require.NoError(t, sw.drainStreams(streamsConsumers, 3*time.Second, 2*time.Minute))
			fctx, fcancel := context.WithTimeout(context.Background(), 3*time.Minute)
			sinkN, err := verifyStreams(fctx, a, sl, qid, epoch, true)
			fcancel()
			require.NoError(t, err, "final streams verification")
			fig.sinkMsgs = sinkN
			failNow("streams at the end")
			a.close()
			break
		}

		// A new partition every epoch, so partition creation (the metadata journal)
		// races the kills too.
		w := &workload{api: a, led: led, epoch: epoch, seed: seed, partitions: append(partitions, fmt.Sprintf("e%d", epoch)), seqs: seqs}
		runStarts = append(runStarts, time.Now())
		stop := w.run(pushers, consumers)
		sw := &streamsWork{api: a, sl: sl, qid: qid, epoch: epoch, seed: seed}
		stopStreams := sw.run(streamsConsumers, true)
		runFor := time.Duration(100+rng.IntN(int(maxRun/time.Millisecond)+1)) * time.Millisecond
		timer := time.NewTimer(runFor)
		<-timer.C
		srv.kill()
		stop()
		stopStreams()
		a.close()
		fig.kills++
		failNow(fmt.Sprintf("during run %d", epoch))

		checkFsckAfterKill(t, led, data, epoch, &fig)

		// One kill in six lands during recovery itself.
		if rng.IntN(6) == 0 {
			require.NoError(t, srv.launch())
			timer := time.NewTimer(time.Duration(rng.IntN(40)) * time.Millisecond)
			<-timer.C
			srv.kill()
			fig.recoveryKills++
			checkFsckAfterKill(t, led, data, epoch, &fig)
		}
		failNow(fmt.Sprintf("fsck after kill %d", epoch+1))
	}

	require.NoError(t, srv.stop(30*time.Second), "graceful stop at the end")
	code, out, errOut := runComb(t, 5*time.Minute, "fsck", data)
	require.Equalf(t, 0, code, "fsck after a clean stop must be clean:\n%s\n%s", out, errOut)

	led.mu.Lock()
	defer led.mu.Unlock()
	kinds := make([]string, 0, len(fig.fsckKinds))
	for k, v := range fig.fsckKinds {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(kinds)
	t.Logf("crash figures: kills %d (+%d during recovery), pushes answered %d (%d messages verified present exactly once), lost answers re-sent %d, "+
		"deliveries %d (redeliveries of acked messages %d, all before the ack answer), acks answered %d (%d messages), "+
		"verification drains %d (%d full; %d messages read, %d promised messages checked), fsck after kill: clean %d, repairable %d [%s], violations %d, wall %v",
		fig.kills, fig.recoveryKills, led.pushes, len(led.confirmed), fig.resent, led.deliveries, led.redeliveries, led.acks, led.ackedMsgs,
		fig.drains, fig.fullDrains, fig.drainedMsgs, fig.checkedMsgs, fig.fsckClean, fig.fsckRepairable, strings.Join(kinds, " "), len(led.violations), time.Since(started).Round(time.Second))
	t.Logf("streams figures: cycles answered success %d (%d source messages folded), success:false %d, answers lost in a kill %d, source pushes %d, sink messages at the end %d",
		sl.cycles.Load(), sl.folded.Load(), sl.failedCycles.Load(), sl.lostCycles.Load(), sl.sourceN, fig.sinkMsgs)
	if path := os.Getenv("CRASH_REPORT"); path != "" {
		_ = os.WriteFile(path, fmt.Appendf(nil, "kills=%d recovery_kills=%d pushes=%d messages_verified=%d resent=%d deliveries=%d acks=%d acked_msgs=%d drains=%d drained=%d fsck_clean=%d fsck_repairable=%d kinds=%s violations=%d seed=%d wall=%v\n",
			fig.kills, fig.recoveryKills, led.pushes, len(led.confirmed), fig.resent, led.deliveries, led.acks, led.ackedMsgs, fig.drains, fig.drainedMsgs,
			fig.fsckClean, fig.fsckRepairable, strings.Join(kinds, ","), len(led.violations), seed, time.Since(started).Round(time.Second)), 0o644)
	}
}

// checkFsckAfterKill runs `comb fsck --json` on the killed directory: clean, or only
// what a kill leaves behind (a torn tail, a stale index), never damage.
func checkFsckAfterKill(t *testing.T, led *ledger, data string, epoch int, fig *crashFigures) {
	t.Helper()
	code, out, errOut := runComb(t, 5*time.Minute, "fsck", "--json", data)
	switch code {
	case 0:
		fig.fsckClean++
		return
	case 1:
		fig.fsckRepairable++
	default:
		led.violate("fsck after kill %d exited %d:\n%s\n%s", epoch+1, code, trunc([]byte(out)), errOut)
		return
	}
	var rep fsckJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		led.violate("fsck --json after kill %d: %v: %s", epoch+1, err, trunc([]byte(out)))
		return
	}
	for _, f := range rep.Findings {
		fig.fsckKinds[f.Kind]++
		if !afterKillKinds[f.Kind] {
			led.violate("fsck after kill %d reports %s (%s): %s", epoch+1, f.Kind, f.Severity, f.Detail)
		}
	}
}
