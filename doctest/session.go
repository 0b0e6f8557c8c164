package doctest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Options is how a session runs a file's blocks.
type Options struct {
	File string   // the file's name in messages ("README.md")
	Dir  string   // the shell's starting working directory
	Env  []string // the shell's whole environment (and the background block's)
	// BackgroundEnv is added to Env for the background block alone, as in the other terminal
	// (the README run's COMB_ADDR: where `make run` listens).
	BackgroundEnv []string
	// Ports rewrites port numbers in every block and directive URL: "6632" → a free port.
	Ports map[string]string
	// CheckPorts refuses to start while a loopback port a block names is taken (ports.go).
	CheckPorts bool
	// BlockTimeout bounds each block, and a background block's wait for its URL.
	BlockTimeout time.Duration
	// StopTimeout bounds a background block's exit after Ctrl-C (default: BlockTimeout).
	StopTimeout time.Duration
	Out         io.Writer // the blocks' output, as it comes, and the session's own lines
}

// Result counts what a session did.
type Result struct {
	Ran     int      // blocks run, background ones included
	Skipped []string // "README.md:123: REASON" for every block not run
}

// RunBlocks runs blocks in order in one bash session (doc.go's conventions) and stops at the first
// block that fails: a non-zero exit of any command in it, an expectation its output lacks, its
// deadline, a background block that never answers or does not stop. The error names the file,
// the block's line and the reason. Every process the session started is killed before Run
// returns.
func RunBlocks(blocks []Block, o Options) (Result, error) {
	var res Result
	if o.BlockTimeout <= 0 {
		o.BlockTimeout = 2 * time.Minute
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = o.BlockTimeout
	}
	blocks = rewritePorts(blocks, o.Ports)
	if err := portsFree(blocks, o); err != nil {
		return res, err
	}
	scratch, err := os.MkdirTemp("", "doctest-")
	if err != nil {
		return res, fmt.Errorf("scratch directory: %w", err)
	}
	defer os.RemoveAll(scratch)
	sh, err := startShell(o, scratch)
	if err != nil {
		return res, err
	}
	defer sh.kill()
	var bg *background
	defer func() {
		if bg != nil {
			bg.kill()
		}
	}()
	for i, b := range blocks {
		where := fmt.Sprintf("%s:%d", o.File, b.Line)
		if b.Stop {
			if bg == nil {
				return res, fmt.Errorf("%s: a stop directive with no background block running", where)
			}
			fmt.Fprintf(o.Out, "== %s: stopping the background block of %s:%d with Ctrl-C (SIGINT to its process group)\n", where, o.File, bg.line)
			if err := bg.stop(o.StopTimeout); err != nil {
				return res, fmt.Errorf("%s: stopping the background block of line %d: %w", where, bg.line, err)
			}
			bg = nil
		}
		switch {
		case b.Kind == Shown:
			continue
		case b.Kind == Skip:
			res.Skipped = append(res.Skipped, where+": "+b.Reason)
			fmt.Fprintf(o.Out, "== %s: SKIP (%s)\n", where, b.Reason)
			continue
		case b.Needs != "" && !hasEnv(o.Env, b.Needs):
			res.Skipped = append(res.Skipped, fmt.Sprintf("%s: %s unset: %s", where, b.Needs, b.Reason))
			fmt.Fprintf(o.Out, "== %s: SKIP (%s is not set: %s)\n", where, b.Needs, b.Reason)
			continue
		}
		file := filepath.Join(scratch, fmt.Sprintf("block-%03d-line-%d.sh", i, b.Line))
		if err := os.WriteFile(file, []byte(b.Text), 0o600); err != nil {
			return res, fmt.Errorf("%s: %w", where, err)
		}
		if b.Kind == Background {
			if bg != nil {
				return res, fmt.Errorf("%s: a second background block while line %d's still runs (stop it first)", where, bg.line)
			}
			fmt.Fprintf(o.Out, "== %s: in the background, until %s answers 200\n", where, b.Wait)
			began := time.Now()
			if bg, err = startBackground(o, file, b, scratch); err != nil {
				return res, fmt.Errorf("%s: %w", where, err)
			}
			fmt.Fprintf(o.Out, "   serving after %v\n", time.Since(began).Round(100*time.Millisecond))
			res.Ran++
			continue
		}
		fmt.Fprintf(o.Out, "== %s\n", where)
		began := time.Now()
		out, err := sh.source(file, b.Line, o.BlockTimeout)
		if err != nil {
			return res, fmt.Errorf("%s: %w\n%s", where, err, tail(out, 30))
		}
		if err := Check(out, b.Expect); err != nil {
			return res, fmt.Errorf("%s: %w\n%s", where, err, tail(out, 30))
		}
		fmt.Fprintf(o.Out, "   passed in %v\n", time.Since(began).Round(100*time.Millisecond))
		res.Ran++
	}
	return res, nil
}

// shell is the session's bash, fed `source FILE` commands on its stdin.
type shell struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	chunks chan []byte
	exited chan struct{}
	marker []byte
	out    io.Writer
	atBOL  bool // the next byte written to out starts a line
}

// prelude makes the session strict where a reader's eye would be: the first failing command
// ends it, saying the file line it was on (LINENO counts from the block file's first line, the
// line after the fence), and an HTTP error answer is a failing curl.
const prelude = `set -eE -o pipefail
curl() { command curl --fail-with-body "$@"; }
__doctest_err() {
  case $2 in
  "source '"*) echo "doctest: the block's last command ended with exit status $1" >&2 ;;
  *) echo "doctest: exit status $1 at $__doctest_file:$((__doctest_line + $3)): $2" >&2 ;;
  esac
}
trap '__doctest_err $? "$BASH_COMMAND" $LINENO' ERR
`

func startShell(o Options, scratch string) (*shell, error) {
	nonce := make([]byte, 8)
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("marker: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("output pipe: %w", err)
	}
	cmd := exec.Command("bash", "--noprofile", "--norc")
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = o.Dir, o.Env, w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group: killed whole at the end
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("shell stdin: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting bash: %w", err)
	}
	w.Close() // the shell and its children hold the write end now
	sh := &shell{cmd: cmd, stdin: stdin, chunks: make(chan []byte, 64), exited: make(chan struct{}),
		marker: []byte("\x01doctest-" + hex.EncodeToString(nonce) + "\x01"), out: o.Out, atBOL: true}
	go func() {
		defer r.Close()
		for {
			buf := make([]byte, 32<<10)
			n, err := r.Read(buf)
			if n > 0 {
				sh.chunks <- buf[:n]
			}
			if err != nil {
				close(sh.chunks)
				return
			}
		}
	}()
	go func() { cmd.Wait(); close(sh.exited) }()
	if _, err := io.WriteString(stdin, prelude+"__doctest_file="+shQuote(o.File)+"\n"); err != nil {
		sh.kill()
		return nil, fmt.Errorf("shell prelude: %w", err)
	}
	return sh, nil
}

// source runs one block file in the shell and returns what it printed. Its stdin is /dev/null,
// so a command reading stdin cannot eat the commands that follow.
func (sh *shell) source(file string, fence int, timeout time.Duration) (string, error) {
	cmd := fmt.Sprintf("__doctest_line=%d\nsource %s </dev/null\nprintf '%%s' %s\n", fence, shQuote(file), shQuote(string(sh.marker)))
	if _, err := io.WriteString(sh.stdin, cmd); err != nil {
		return "", fmt.Errorf("the shell is gone: %w", err)
	}
	var buf []byte
	shown := 0 // bytes of buf already written to out
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		select {
		case c, ok := <-sh.chunks:
			if !ok {
				sh.show(buf[shown:])
				return string(buf), sh.exitError()
			}
			buf = append(buf, c...)
			if i := bytes.Index(buf, sh.marker); i >= 0 {
				sh.show(buf[shown:i])
				sh.endLine()
				return string(buf[:i]), nil
			}
			// Hold back what could be the start of a marker split across reads.
			if safe := len(buf) - len(sh.marker) + 1; safe > shown {
				sh.show(buf[shown:safe])
				shown = safe
			}
		case <-sh.exited:
			// Drain what the shell printed before it exited; a child it left running may hold
			// the pipe open, so not until EOF.
			grace := time.After(time.Second)
		drain:
			for {
				select {
				case c, ok := <-sh.chunks:
					if !ok {
						break drain
					}
					buf = append(buf, c...)
				case <-grace:
					break drain
				}
			}
			sh.show(buf[shown:])
			sh.endLine()
			return string(buf), sh.exitError()
		case <-deadline.C:
			sh.show(buf[shown:])
			sh.endLine()
			return string(buf), fmt.Errorf("still running after %v (the block's deadline)", timeout)
		}
	}
}

func (sh *shell) exitError() error {
	<-sh.exited
	if st := sh.cmd.ProcessState; st != nil && !st.Success() {
		return fmt.Errorf("a command failed: the shell exited with %v", st)
	}
	return errors.New("the shell exited")
}

// show writes p to out with every line indented, so the blocks' output stands apart from the
// session's own "==" lines.
func (sh *shell) show(p []byte) {
	for len(p) > 0 {
		if sh.atBOL {
			io.WriteString(sh.out, "  | ")
			sh.atBOL = false
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			sh.out.Write(p)
			return
		}
		sh.out.Write(p[:i+1])
		sh.atBOL, p = true, p[i+1:]
	}
}

func (sh *shell) endLine() {
	if !sh.atBOL {
		io.WriteString(sh.out, "\n")
		sh.atBOL = true
	}
}

// kill ends the shell and everything in its process group (the servers its blocks started in
// the background with &): SIGTERM, then SIGKILL for what still runs after a few seconds.
func (sh *shell) kill() {
	sh.stdin.Close()
	killGroup(sh.cmd.Process.Pid, sh.exited, 5*time.Second)
}

// killGroup sends SIGTERM to process group pgid, waits up to grace for it to empty (and for
// leader, the group's first process, to be reaped), then SIGKILLs what is left.
func killGroup(pgid int, leader <-chan struct{}, grace time.Duration) {
	syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if groupGone(pgid) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-leader:
	case <-time.After(grace):
	}
}

// groupGone reports whether process group pgid has no process left (zombies count as gone
// only once reaped, so the leader's must be waited for by its owner).
func groupGone(pgid int) bool {
	return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

func hasEnv(env []string, name string) bool {
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); k == name && v != "" {
			return true
		}
	}
	return false
}

// shQuote quotes s for bash as one word.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tail is the last n lines of s, for an error message.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  last output:\n  | " + strings.Join(lines, "\n  | ")
}
