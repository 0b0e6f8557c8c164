package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// BinaryCompare is a comparison of two comb binaries (issue 14: `comb bench` runs the
// same-round comparison against another comb binary).
type BinaryCompare struct {
	Baseline, Candidate string   // paths of the two comb executables
	Serve               []string // serve flags both get (not --addr or --data-dir)
	DataRoot            string   // each run's fresh data directory is made under it
	Rounds              int
	Config              Config // the workload, normalized; URL and ServerPID are set per run
	// Cluster > 0 (3 or 5): each run of a side is that binary on one node and then on a fresh
	// local cluster of Cluster nodes (StartCluster), the workload sent to its leader; the
	// run's Result is the cluster's (Server* figures the leader's, Follower* the others'),
	// with the single node's as SingleNode and the two ratios ClusterRate and
	// ClusterLeaderCPU. The two go single-first in odd rounds, cluster-first in even ones.
	Cluster int
}

// runner returns the RunFunc of c: each run starts its side's binary with StartServer, runs
// c.Config against it through this process's HTTP driver (the same client for both sides),
// and stops the server; progress (nil = none) gets the live lines of bench.Run.
func (c BinaryCompare) runner(progress io.Writer) RunFunc {
	return func(ctx context.Context, side Side, round int) (*Result, error) {
		bin := c.Baseline
		if side == Candidate {
			bin = c.Candidate
		}
		if c.Cluster > 0 {
			return c.runPair(ctx, bin, side, round, progress)
		}
		srv, err := StartServer(ctx, bin, c.Serve, c.DataRoot)
		if err != nil {
			return nil, err
		}
		res, runErr := c.runAgainst(ctx, srv, progress)
		stopErr := srv.Stop()
		if runErr == nil && ctx.Err() != nil {
			// Cancelled mid-window: a shortened run would skew its round's ratios.
			runErr = fmt.Errorf("run cut short: %w", ctx.Err())
		}
		if runErr != nil {
			return nil, errors.Join(runErr, stopErr)
		}
		if stopErr != nil {
			return nil, stopErr
		}
		res.Variant = side.String()
		return res, nil
	}
}

func (c BinaryCompare) runAgainst(ctx context.Context, srv *Server, progress io.Writer) (*Result, error) {
	return c.runOn(ctx, srv, nil, progress)
}

// runOn runs the workload against srv, sampling followers' processes beside it (nil = none).
func (c BinaryCompare) runOn(ctx context.Context, srv *Server, followers []int, progress io.Writer) (*Result, error) {
	cfg := c.Config
	cfg.Driver = DriverComb
	cfg.URL = srv.URL
	cfg.ServerPID = srv.PID
	cfg.FollowerPIDs = followers
	drv, err := NewDriver(cfg, Workers(cfg)+cfg.Concurrency)
	if err != nil {
		return nil, err
	}
	defer drv.Close()
	return Run(ctx, cfg, drv, progress)
}

// runPair is one run of the cluster shape: bin on one node and on a fresh cluster, in the
// order of the round (single first in odd rounds), each on fresh directories.
func (c BinaryCompare) runPair(ctx context.Context, bin string, side Side, round int, progress io.Writer) (*Result, error) {
	var single, clustered *Result
	runSingle := func() error {
		srv, err := StartServer(ctx, bin, c.Serve, c.DataRoot)
		if err != nil {
			return err
		}
		res, runErr := c.runAgainst(ctx, srv, progress)
		if err := finishRun(ctx, runErr, srv.Stop()); err != nil {
			return fmt.Errorf("single node: %w", err)
		}
		single = res
		return nil
	}
	runCluster := func() error {
		cl, err := StartCluster(ctx, bin, c.Serve, c.DataRoot, c.Cluster)
		if err != nil {
			return err
		}
		res, runErr := c.runOn(ctx, cl.Leader, cl.FollowerPIDs(), progress)
		cl.Stop()
		if err := finishRun(ctx, runErr, nil); err != nil {
			return fmt.Errorf("%d-node cluster: %w", c.Cluster, err)
		}
		clustered = res
		return nil
	}
	steps := []func() error{runSingle, runCluster}
	if round%2 == 0 {
		steps[0], steps[1] = runCluster, runSingle
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	single.Variant = side.String() + "-single"
	clustered.Variant = side.String()
	clustered.ClusterNodes = c.Cluster
	clustered.SingleNode = single
	if single.MsgPerSec > 0 {
		clustered.ClusterRate = clustered.MsgPerSec / single.MsgPerSec
	}
	if single.ServerCPUMicrosPerRequest > 0 {
		clustered.ClusterLeaderCPU = clustered.ServerCPUMicrosPerRequest / single.ServerCPUMicrosPerRequest
	}
	return clustered, nil
}

// finishRun is a run's outcome from its workload's error and its server's stop: a run cut
// short by ctx fails (a shortened window would skew its round's ratios).
func finishRun(ctx context.Context, runErr, stopErr error) error {
	if runErr == nil && ctx.Err() != nil {
		runErr = fmt.Errorf("run cut short: %w", ctx.Err())
	}
	if runErr != nil {
		return errors.Join(runErr, stopErr)
	}
	return stopErr
}

// Run performs the comparison: a fresh server per run, sides interleaved by RoundOrder. onRun
// (nil = none) sees each run as it ends. On a failed run the Comparison returned holds the
// runs so far and their ratios, next to the error.
func (c BinaryCompare) Run(ctx context.Context, progress io.Writer, onRun func(CompareRun)) (*Comparison, error) {
	cmp := c.Describe()
	runs, err := Compare(ctx, c.Rounds, c.runner(progress), onRun)
	cmp.Runs = runs
	cmp.Ratios = Summarize(runs)
	if err != nil {
		cmp.Error = err.Error()
	}
	return cmp, err
}

// Describe is the Comparison before any run: the binaries with their hashes and the settings.
func (c BinaryCompare) Describe() *Comparison {
	return &Comparison{
		Workload:   c.Config.Workload,
		Baseline:   Binary{Path: c.Baseline, SHA256: fileSHA256(c.Baseline)},
		Candidate:  Binary{Path: c.Candidate, SHA256: fileSHA256(c.Candidate)},
		Serve:      append([]string{}, c.Serve...),
		DataRoot:   c.DataRoot,
		SyncMetric: c.Config.SyncMetric,
		Rounds:     c.Rounds,
		Cluster:    c.Cluster,
		Date:       time.Now().UTC().Format("2006-01-02"),
	}
}

// Check verifies what can be verified before the first run: both binaries are executable
// files, the data root is a directory, the serve flags leave --addr and --data-dir to the
// comparison, and there is at least one round. Errors wrap ErrConfig.
func (c BinaryCompare) Check() error {
	if c.Rounds < 1 {
		return fmt.Errorf("--rounds %d is below 1: %w", c.Rounds, ErrConfig)
	}
	for _, b := range []struct{ flag, path string }{{"--baseline", c.Baseline}, {"--candidate", c.Candidate}} {
		if b.path == "" {
			return fmt.Errorf("%s is required: %w", b.flag, ErrConfig)
		}
		st, err := os.Stat(b.path)
		if err != nil {
			return fmt.Errorf("%s %s: %w (%w)", b.flag, b.path, ErrConfig, err)
		}
		if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("%s %s is not an executable file: %w", b.flag, b.path, ErrConfig)
		}
	}
	if st, err := os.Stat(c.DataRoot); err != nil || !st.IsDir() {
		return fmt.Errorf("--data-root %s is not a directory: %w", c.DataRoot, ErrConfig)
	}
	if c.Cluster != 0 {
		if c.Cluster != 3 && c.Cluster != 5 {
			return fmt.Errorf("--cluster %d (want 0, 3 or 5): %w", c.Cluster, ErrConfig)
		}
		if c.Config.Workload != WorkloadPush {
			return fmt.Errorf("--cluster with --workload %s: the cluster shape pushes only: %w", c.Config.Workload, ErrConfig)
		}
		return CheckClusterServeArgs(c.Serve)
	}
	return CheckServeArgs(c.Serve)
}

// OnTmpfs reports whether dir is on a tmpfs or ramfs, where fdatasync costs nothing: a
// comparison of durable writes there measures neither binary's sync path.
func OnTmpfs(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC
}

// fileSHA256 is the hex SHA-256 of a file, "" when it cannot be read (Check reports why).
func fileSHA256(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}
