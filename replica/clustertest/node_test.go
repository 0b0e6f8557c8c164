//go:build cluster

package clustertest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// buildComb builds ./cmd/comb into dir and returns the binary's path.
func buildComb(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	bin := filepath.Join(dir, "comb")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/comb")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/comb: %w\n%s", err, msg)
	}
	return bin, nil
}

// freeAddrs reserves n distinct loopback ports by listening on all of them at once, then
// frees them: a node keeps its HTTP and raft addresses across restarts (--initial-cluster
// names the raft ones), so they are chosen once.
func freeAddrs(n int) ([]string, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	out := make([]string, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}

// node is one `comb serve` process of the cluster, across its restarts. Its methods are
// called by the harness's one fault goroutine; running and paused are read by others.
type node struct {
	id, httpAddr, raftAddr string
	bin, dataDir, logPath  string
	cluster                string   // --initial-cluster
	peerFlags              []string // --peer-cert-file, --peer-key-file, --peer-trusted-ca-file

	mu          sync.Mutex
	cmd         *exec.Cmd
	exited      chan struct{}
	incarnation int  // 1 for the first start, +1 per start
	paused      bool // SIGSTOPped
	expectExit  bool // the harness sent the signal that ends it
	// onUnexpectedExit is called (from the process's wait goroutine) when a process ends
	// without the harness asking: a crash is a finding, its log tail the evidence.
	onUnexpectedExit func(n *node, incarnation int, err error)
}

func (n *node) url() string { return "http://" + n.httpAddr }

// launch starts a new process of the node on its data directory; the log appends.
func (n *node) launch() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil {
		return fmt.Errorf("node %s: already running", n.id)
	}
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	n.incarnation++
	fmt.Fprintf(logf, "\n===== harness: start %s incarnation %d at %s\n", n.id, n.incarnation, time.Now().UTC().Format(time.RFC3339Nano))
	args := append([]string{"serve", "--addr", n.httpAddr, "--data-dir", n.dataDir,
		"--node-id", n.id, "--raft-addr", n.raftAddr, "--initial-cluster", n.cluster}, n.peerFlags...)
	cmd := exec.Command(n.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("node %s: start: %w", n.id, err)
	}
	n.cmd, n.exited, n.paused, n.expectExit = cmd, make(chan struct{}), false, false
	inc, exited := n.incarnation, n.exited
	go func() {
		err := cmd.Wait()
		logf.Close()
		n.mu.Lock()
		unexpected := !n.expectExit
		if n.cmd == cmd {
			n.cmd, n.paused = nil, false
		}
		cb := n.onUnexpectedExit
		n.mu.Unlock()
		close(exited)
		if unexpected && cb != nil {
			cb(n, inc, err)
		}
	}()
	return nil
}

// state says whether a process runs, whether it is paused, and its incarnation.
func (n *node) state() (running, paused bool, incarnation int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd != nil, n.paused, n.incarnation
}

// signal sends sig to the running process; ending says the harness expects it to exit.
func (n *node) signal(sig syscall.Signal, ending bool) (chan struct{}, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return nil, fmt.Errorf("node %s: not running", n.id)
	}
	if ending {
		n.expectExit = true
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
		return nil, fmt.Errorf("node %s: %v: %w", n.id, sig, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		n.paused = true
	case syscall.SIGCONT:
		n.paused = false
	}
	return n.exited, nil
}

// kill9 sends SIGKILL and waits until the process is gone.
func (n *node) kill9() error {
	exited, err := n.signal(syscall.SIGKILL, true)
	if err != nil {
		return err
	}
	<-exited
	return nil
}

// term sends SIGTERM (after SIGCONT, should the node be paused) and waits up to timeout for a
// clean exit, then SIGKILLs; clean says whether it exited in time.
func (n *node) term(timeout time.Duration) (clean bool, err error) {
	if _, paused, _ := n.state(); paused {
		if _, err := n.signal(syscall.SIGCONT, false); err != nil {
			return false, err
		}
	}
	exited, err := n.signal(syscall.SIGTERM, true)
	if err != nil {
		return false, err
	}
	select {
	case <-exited:
		return true, nil
	case <-time.After(timeout):
		// SIGQUIT first: the Go runtime writes every goroutine's stack to the node's log,
		// the evidence of where it hung.
		if _, err := n.signal(syscall.SIGQUIT, false); err == nil {
			select {
			case <-exited:
				return false, nil
			case <-time.After(2 * time.Second):
			}
		}
		return false, n.kill9()
	}
}

// logTail is the last max bytes of the node's log.
func (n *node) logTail(max int) string {
	b, _ := os.ReadFile(n.logPath)
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}
