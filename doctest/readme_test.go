//go:build readme

package doctest

import (
	"bytes"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestREADME runs README.md's sh blocks in order as a newcomer pastes them (doc.go): in a copy
// of this tree (tracked and untracked files, not the ignored ones: a fresh clone with this
// checkout's edits), with a HOME of its own (`make install` fills a fresh ~/.local/bin), and
// 6632 rewritten to a free port, which is also the COMB_ADDR of `make run`'s terminal, so a
// `make run` already on 6632 is neither hit nor in the way. README_TEST_BLOCK_TIMEOUT bounds
// each block (default 4m: the first block may build comb cold); README_TEST_KEEP=1 keeps the copy
// (in $TMPDIR/comb-readme-test-UID, see workDir).
func TestREADME(t *testing.T) {
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	md, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	blocks, err := Parse(md)
	require.NoError(t, err, "README.md's blocks and directives")

	work := workDir(t)
	src, home := filepath.Join(work, "comb"), filepath.Join(work, "home")
	require.NoError(t, os.MkdirAll(home, 0o755))
	require.NoError(t, copyTree(root, src))
	env, err := newcomerEnv(home, blocks)
	require.NoError(t, err)

	port := freePort(t)
	timeout := 4 * time.Minute
	if v := os.Getenv("README_TEST_BLOCK_TIMEOUT"); v != "" {
		timeout, err = time.ParseDuration(v)
		require.NoError(t, err, "README_TEST_BLOCK_TIMEOUT")
	}
	start := time.Now()
	res, err := RunBlocks(blocks, Options{
		File: "README.md", Dir: src, Env: env, BackgroundEnv: []string{"COMB_ADDR=127.0.0.1:" + port},
		Ports: map[string]string{"6632": port}, CheckPorts: true, BlockTimeout: timeout, Out: os.Stdout,
	})
	fmt.Printf("== README.md: %d blocks ran, %d skipped, in %v (6632 was %s)\n", res.Ran, len(res.Skipped), time.Since(start).Round(time.Second), port)
	for _, s := range res.Skipped {
		fmt.Printf("   skipped %s\n", s)
	}
	require.NoError(t, err)
	require.Positive(t, res.Ran)

	t.Run("make run stops when its own pid is killed", func(t *testing.T) { makeRunStopsOnItsPid(t, src, env) })
}

// workDir is the run's directory: always the same path, so that the build cache, which keys a
// package on its directory, serves the packages a later run did not change (a cold build of
// comb takes minutes on a loaded 2-core box). A lock beside it makes a second run at the same
// time fail at once instead of sharing the directory. It is emptied before the run and
// removed after it, unless README_TEST_KEEP=1.
func workDir(t *testing.T) string {
	base := filepath.Join(os.TempDir(), fmt.Sprintf("comb-readme-test-%d", os.Getuid()))
	lock, err := os.OpenFile(base+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	require.NoError(t, err)
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		t.Fatalf("another README run holds %s.lock (%v): wait for it to end", base, err)
	}
	require.NoError(t, os.RemoveAll(base))
	require.NoError(t, os.MkdirAll(base, 0o700))
	t.Cleanup(func() {
		if os.Getenv("README_TEST_KEEP") == "1" {
			t.Logf("the copy stays in %s", base)
		} else {
			os.RemoveAll(base)
		}
		lock.Close() // releases the flock
	})
	return base
}

// makeRunStopsOnItsPid is issue 25 #2: `kill <pid of make run>` must stop comb (make forwards
// SIGTERM to the binary it execs), not orphan it holding the data directory's LOCK.
func makeRunStopsOnItsPid(t *testing.T, src string, env []string) {
	port := freePort(t)
	data := filepath.Join(t.TempDir(), "data")
	var log bytes.Buffer
	cmd := exec.Command("make", "--no-print-directory", "run", "ADDR=127.0.0.1:"+port, "DATA_DIR="+data)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = src, env, &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	url := "http://127.0.0.1:" + port + "/health"
	require.Eventually(t, func() bool {
		r, err := http.Get(url)
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	}, 3*time.Minute, 200*time.Millisecond, "make run never served: %s", &log)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM), "kill <make's pid>, not its group")
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Fatalf("make run still runs a minute after SIGTERM:\n%s", &log)
	}
	require.Eventually(t, func() bool { return groupGone(cmd.Process.Pid) }, 30*time.Second, 50*time.Millisecond,
		"comb outlived make: the signal did not reach it")
	require.Contains(t, log.String(), `"message":"stopped"`, "comb stopped cleanly (its final checkpoint written)")
	out, err := exec.Command(filepath.Join(src, "bin", "comb"), "fsck", data).CombinedOutput()
	require.NoError(t, err, "fsck after the stop: a clean directory, no LOCK held\n%s", out)
}

// copyTree copies what a clone of root would hold plus this checkout's uncommitted edits: the
// files git tracks or would track (untracked, not ignored), never bin/, comb-data/ and the like.
func copyTree(root, dst string) error {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		return fmt.Errorf("git ls-files in %s: %w", root, err)
	}
	for _, rel := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		from, to := filepath.Join(root, rel), filepath.Join(dst, rel)
		fi, err := os.Lstat(from)
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree, not yet in the index
			}
			return err
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(from)
			if err != nil {
				return err
			}
			if err := os.Symlink(target, to); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(from)
			if err != nil {
				return err
			}
			if err := os.WriteFile(to, b, fi.Mode().Perm()); err != nil {
				return err
			}
		}
	}
	return nil
}

// newcomerEnv is this process's environment as a newcomer's shell would have it: HOME fresh,
// Go's caches and settings kept (a build would otherwise start from an empty module cache),
// `go` on PATH, and none of the variables that would change what comb or make does (COMB_*,
// JWT_*, QUEEN_*, Queen's HOST/PORT and intervals, make's own), except those a block's
// `needs` directive names.
func newcomerEnv(home string, blocks []Block) ([]string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("go is not on PATH: %w", err)
	}
	keep := map[string]bool{}
	for _, b := range blocks {
		if b.Needs != "" {
			keep[b.Needs] = true
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !keep[k] && dropped(k) {
			continue
		}
		env = append(env, kv)
	}
	goenv := exec.Command(goBin, "env", "GOCACHE", "GOMODCACHE", "GOPATH", "GOENV", "GOTOOLCHAIN")
	out, err := goenv.Output()
	if err != nil {
		return nil, fmt.Errorf("go env: %w", err)
	}
	vals := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	for i, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOENV", "GOTOOLCHAIN"} {
		if i < len(vals) && vals[i] != "" {
			env = append(env, k+"="+vals[i])
		}
	}
	path := os.Getenv("PATH")
	if !strings.Contains(":"+path+":", ":"+filepath.Dir(goBin)+":") {
		path = filepath.Dir(goBin) + ":" + path
	}
	return append(env, "HOME="+home, "PATH="+path), nil
}

func dropped(k string) bool {
	for _, p := range []string{"COMB_", "JWT_", "QUEEN_", "GO"} {
		if strings.HasPrefix(k, p) && !(p == "GO" && (k == "GOFLAGS" || k == "GOPROXY" || k == "GONOSUMDB" || k == "GOPRIVATE" || k == "GONOPROXY" || k == "GOSUMDB")) {
			return true
		}
	}
	switch k {
	case "HOME", "PATH", "HOST", "PORT", "ADDR", "DATA_DIR", "PREFIX", "DESTDIR", "BIN",
		"DEFAULT_TIMEOUT", "POP_DEFAULT_TIMEOUT_MS", "RETENTION_INTERVAL", "EVICTION_INTERVAL",
		"MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES", "GNUMAKEFLAGS", "OLDPWD", "CDPATH":
		return true
	}
	return false
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
