package doctest

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// background is a block running as in a second terminal: its own process group, its output in
// a log file, stopped with Ctrl-C.
type background struct {
	line   int
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

// startBackground starts block file and waits until b.Wait answers 200, the block's process
// exits (an error with its log's tail), or o.BlockTimeout passes.
func startBackground(o Options, file string, b Block, scratch string) (*background, error) {
	logPath := filepath.Join(scratch, fmt.Sprintf("background-line-%d.log", b.Line))
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("background log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command("bash", "--noprofile", "--norc", "-c", "set -e -o pipefail; source "+shQuote(file))
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = o.Dir, append(append([]string(nil), o.Env...), o.BackgroundEnv...), logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // as a terminal's job: Ctrl-C reaches the whole group
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the background block: %w", err)
	}
	bg := &background{line: b.Line, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(bg.exited) }()
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(o.BlockTimeout)
	for {
		select {
		case <-bg.exited:
			return nil, fmt.Errorf("the background block exited (%v) before %s answered:\n%s", cmd.ProcessState, b.Wait, bg.logTail())
		default:
		}
		if resp, err := client.Get(b.Wait); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return bg, nil
			}
		}
		if time.Now().After(deadline) {
			bg.kill()
			return nil, fmt.Errorf("%s did not answer 200 within %v:\n%s", b.Wait, o.BlockTimeout, bg.logTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stop is Ctrl-C in the block's terminal: SIGINT to its process group, then a wait until every
// process of the group exited. A process still running at the deadline is an error (a server
// that does not stop when its reader presses Ctrl-C), and is then killed.
func (bg *background) stop(timeout time.Duration) error {
	pgid := bg.cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGINT)
	deadline := time.Now().Add(timeout)
	for !groupGone(pgid) {
		if time.Now().After(deadline) {
			bg.kill()
			return fmt.Errorf("processes of its group still ran %v after Ctrl-C:\n%s", timeout, bg.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

func (bg *background) kill() { killGroup(bg.cmd.Process.Pid, bg.exited, 5*time.Second) }

func (bg *background) logTail() string {
	b, _ := os.ReadFile(bg.log)
	return tail(string(b), 20)
}
