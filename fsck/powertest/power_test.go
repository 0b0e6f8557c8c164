package powertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/fsck"
	"github.com/combmq/comb/vfs"
	"github.com/combmq/comb/vfs/errorfs"
)

const dataDir = "/data"

// maxOpenFiles is the broker's handle budget (POWER_MAX_OPEN_FILES, default
// 48): fewer than the partitions' files, so logs are released with unsynced
// appends and loaded again; -1 = no bound.
var maxOpenFiles = func() int {
	if v, err := strconv.Atoi(os.Getenv("POWER_MAX_OPEN_FILES")); err == nil && v != 0 {
		return v
	}
	return 48
}()

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

// newDisk is the file system of a run: the strict twin (names need their
// directory synced) whose SyncFS syncs nothing unless POWER_SYNCFS=real, so
// that a flush pass that trusts syncfs(2) shows as a loss (issue 21 item 2).
func newDisk(m *vfs.Mem) *vfs.Mem {
	m.SetSyncFSNoop(os.Getenv("POWER_SYNCFS") != "real")
	return m
}

// figures are what the run did, for the log.
type figures struct {
	cuts, recoveryCuts, resent, drains, drained, checked int
	fsck                                                 map[int]int
	fsckKinds                                            map[string]int
}

// TestPowerLoss is the power-loss harness (issue 21): POWER_CUTS cuts of a
// live broker under mixed load, each followed by fsck on what was left, a
// reopen on it and the checks of the package comment.
func TestPowerLoss(t *testing.T) {
	cuts := envInt("POWER_CUTS", 3)
	seed := uint64(envInt("POWER_SEED", int(time.Now().UnixNano()%1_000_000_007)))
	nparts := envInt("POWER_PARTITIONS", 32)
	maxRun := envInt("POWER_MAX_RUN_MS", 600)
	t.Logf("POWER_SEED=%d POWER_CUTS=%d partitions=%d syncfs=%s", seed, cuts, nparts, map[bool]string{true: "noop", false: "real"}[os.Getenv("POWER_SYNCFS") != "real"])
	rng := rand.New(rand.NewPCG(seed, 0x90e1))

	partitions := make([]string, nparts)
	for i := range partitions {
		partitions[i] = fmt.Sprintf("p%02d", i)
	}
	led := newLedger()
	fig := figures{fsck: map[int]int{}, fsckKinds: map[string]int{}}
	seqs := make([]int, 4)
	txSeq := 0
	cursors := map[string]int64{} // partition id → TotalConsumed found at the last reopen
	var runStarts []time.Time
	started := time.Now()

	disk := newDisk(vfs.NewStrictMem(dataDir))
	b, live, err := open(disk)
	require.NoError(t, err)
	opts := broker.DefaultQueueOptions()
	opts.RetryLimit, opts.LeaseTime, opts.DeadLetterQueue, opts.DLQAfterMaxRetries = 1, 1, true, true
	_, err = b.Configure(broker.ConfigureRequest{Queue: queueName, Options: opts})
	require.NoError(t, err)

	for run := 0; ; run++ {
		if run > 0 {
			n, err := resend(b, led, run)
			if err != nil {
				led.violate(vOpen, "seed %d run %d: %v", seed, run, err)
				break
			}
			fig.resent += n
			full := run%10 == 0 || run == cuts
			var since time.Time
			if !full {
				since = runStarts[run-1].Add(-50 * time.Millisecond)
			}
			verify(t, b, led, seed, run, since, cursors, &fig)
		}
		if run == cuts || t.Failed() {
			break
		}

		ctx, cancel := context.WithCancel(context.Background())
		w := &load{b: b, led: led, run: run, seed: seed, partitions: partitions, seqs: seqs, txSeq: &txSeq}
		runStarts = append(runStarts, time.Now())
		wait := w.start(ctx, len(seqs), 3)
		runFor := time.Duration(100+rng.IntN(maxRun+1)) * time.Millisecond
		time.Sleep(runFor)
		cutSeed := rng.Uint64()
		led.cut.Store(true)
		left := disk.PowerCut(cutSeed)
		kill(b, live, cancel, wait)
		fig.cuts++
		t.Logf("run %d: cut %d after %v (cut seed %d); %d pushes answered so far", run, fig.cuts, runFor, cutSeed, led.pushes)

		checkFsck(t, led, left, seed, run, cutSeed, &fig)
		// One cut in five lands in the recovery of the last one.
		if rng.IntN(5) == 0 {
			disk = newDisk(left)
			delay := time.Duration(rng.IntN(30)) * time.Millisecond
			cutSeed = rng.Uint64()
			type opened struct {
				b    *broker.Broker
				live *errorfs.FS
				err  error
			}
			ch := make(chan opened, 1)
			go func() { b, live, err := open(disk); ch <- opened{b, live, err} }()
			time.Sleep(delay)
			left = disk.PowerCut(cutSeed)
			o := <-ch
			if o.err != nil {
				led.violate(vOpen, "seed %d run %d: the reopen a cut interrupted failed before the cut: %v", seed, run, o.err)
			} else {
				kill(o.b, o.live, func() {}, func() {})
			}
			fig.recoveryCuts++
			t.Logf("run %d: cut during recovery after %v (cut seed %d)", run, delay, cutSeed)
			checkFsck(t, led, left, seed, run, cutSeed, &fig)
		}

		disk = newDisk(left)
		led.cut.Store(false)
		if b, live, err = open(disk); err != nil {
			led.violate(vOpen, "seed %d run %d cut seed %d: %v", seed, run, cutSeed, err)
			break
		}
	}
	if b != nil {
		_ = b.Close()
	}
	kinds := make([]string, 0, len(fig.fsckKinds))
	for k, n := range fig.fsckKinds {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(kinds)
	t.Logf("seed %d: %d cuts (%d during recovery) in %v; %d pushes answered (%d messages, %d duplicate answers), %d lost answers re-sent, %d acks, %d nacks, %d to the DLQ, %d transactions; %d deliveries (%d of acked messages before their ack's answer); %d drains of %d messages checking %d promises; fsck exits %v, findings %s",
		seed, fig.cuts, fig.recoveryCuts, time.Since(started).Round(time.Millisecond), led.pushes, led.pushedMsgs, led.dupAnswers, fig.resent,
		led.acks, led.nacks, led.dlqs, led.txs, led.deliveries, led.redeliveries, fig.drains, fig.drained, fig.checked, fig.fsck, strings.Join(kinds, " "))
	t.Logf("seed %d: violations by kind: [%s]", seed, led.byKind())
	if n := led.violations(); n > 0 {
		t.Errorf("POWER_SEED=%d: %d violation(s) by kind:\n%s", seed, n, led.summary())
	}
}

// open opens the broker on disk behind an errorfs.FS through which kill fails
// every later call of the broker that outlives its power.
func open(disk *vfs.Mem) (*broker.Broker, *errorfs.FS, error) {
	live := errorfs.New(disk)
	b, err := broker.Open(broker.Config{DataDir: dataDir, FS: live, Sync: "always", Logger: zerolog.Nop(),
		FlushInterval: 20 * time.Millisecond, CommitLogFileBytes: 256 << 10, MaxSegmentFileSize: 32 << 10,
		MaxOpenFiles: maxOpenFiles, CheckpointInterval: time.Millisecond})
	return b, live, err
}

// kill ends a broker whose power was cut: every call to its disk fails from
// now on (what it does after the cut changes nothing that was left), its
// clients stop, and it is closed so its goroutines end.
func kill(b *broker.Broker, live *errorfs.FS, cancel, wait func()) {
	live.Inject(errorfs.Fault{Err: unix.EIO})
	cancel()
	wait()
	_ = b.Close()
}

// checkFsck runs fsck on a copy on disk of what a cut left: exit 2 is a
// violation, with every finding.
func checkFsck(t *testing.T, led *ledger, left *vfs.Mem, seed uint64, run int, cutSeed uint64, fig *figures) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "data")
	require.NoError(t, copyOut(left, dataDir, root))
	defer os.RemoveAll(root)
	rep, err := fsck.Run(root, fsck.Options{Mode: fsck.ModeCheck})
	if err != nil {
		led.violate(vFsck2, "seed %d run %d cut seed %d: fsck could not run: %v", seed, run, cutSeed, err)
		return
	}
	fig.fsck[rep.ExitCode]++
	for _, f := range rep.Findings {
		fig.fsckKinds[string(f.Kind)]++
	}
	if rep.ExitCode >= 2 {
		var b strings.Builder
		for _, f := range rep.Findings {
			fmt.Fprintf(&b, "\n      %s %s %s [%d,%d) offsets %d-%d: %s", f.Severity, f.Kind, f.File, f.StartByte, f.EndByte, f.FirstOffset, f.LastOffset, f.Detail)
		}
		led.violate(vFsck2, "seed %d run %d cut seed %d: fsck exit %d, verdict %s:%s", seed, run, cutSeed, rep.ExitCode, rep.Verdict, b.String())
	}
}

// copyOut writes every file under from in m to the directory to on disk.
func copyOut(m *vfs.Mem, from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	names, err := m.List(from)
	if err != nil {
		return err
	}
	for _, n := range names {
		src, dst := filepath.Join(from, n), filepath.Join(to, n)
		if _, err := m.List(src); err == nil {
			if err := copyOut(m, src, dst); err != nil {
				return err
			}
			continue
		}
		if err := os.WriteFile(dst, m.Bytes(src), 0o644); err != nil {
			return err
		}
	}
	return nil
}
