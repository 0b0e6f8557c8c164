package doctest

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// play parses md and runs it in a fresh directory, returning the result, the error and the
// session's output.
//
//lint:ignore ST1008 the session's output comes last: every caller reads it after checking the error
func play(t *testing.T, md string, edit func(*Options)) (Result, error, string) {
	t.Helper()
	blocks, err := Parse([]byte(md))
	require.NoError(t, err)
	var out bytes.Buffer
	o := Options{File: "T.md", Dir: t.TempDir(), Env: os.Environ(), BlockTimeout: 20 * time.Second, Out: &out}
	if edit != nil {
		edit(&o)
	}
	res, err := RunBlocks(blocks, o)
	return res, err, out.String()
}

func TestBlocksShareOneShell(t *testing.T) {
	res, err, out := play(t, "```sh\nX=41\nf() { echo \"f:$1\"; }\nmkdir sub && cd sub\n```\n"+
		"```sh\necho $((X+1)) $(basename $PWD)\nf ok\n# → 42 sub\n# → f:ok\n```\n", nil)
	require.NoError(t, err, out)
	require.Equal(t, 2, res.Ran)
	require.Contains(t, out, "== T.md:1\n")
	require.Contains(t, out, "  | 42 sub\n  | f:ok\n", "each output line indented under its block")
}

func TestAFailingCommandEndsTheSessionWithItsLine(t *testing.T) {
	res, err, out := play(t, "```sh\necho one\n```\n\n```sh\ntrue\nfalse\necho never\n```\n```sh\necho nor this\n```\n", nil)
	require.Error(t, err)
	require.Equal(t, 1, res.Ran)
	require.Contains(t, err.Error(), "T.md:5: a command failed")
	require.Contains(t, out, "doctest: exit status 1 at T.md:7: false")
	require.NotContains(t, out, "never")
	require.NotContains(t, out, "nor this")
}

func TestAFailingPipelineStageFails(t *testing.T) {
	_, err, _ := play(t, "```sh\nfalse | cat\n```\n", nil)
	require.ErrorContains(t, err, "T.md:1: a command failed")
}

func TestCurlFailsOnAnHTTPError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			w.Write([]byte(`{"ok":true}`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":"Queue not found"}`))
	}))
	defer srv.Close()
	_, err, out := play(t, "```sh\ncurl -s "+srv.URL+"/ok\n# → {\"ok\":true}\ncurl -s "+srv.URL+"/missing\n```\n", nil)
	require.ErrorContains(t, err, "a command failed")
	require.Contains(t, out, `{"error":"Queue not found"}`, "the body of the error answer is still shown")
}

func TestAnExpectationTheOutputLacksFails(t *testing.T) {
	_, err, _ := play(t, "```sh\necho '{\"count\":3}'\n# → {\"count\":1}\n```\n", nil)
	require.ErrorContains(t, err, `T.md:1: line 3 expects "{\"count\":1}", which the output lacks`)
}

func TestSkipAndNeeds(t *testing.T) {
	md := "<!-- readme-test: skip takes an hour -->\n```sh\nexit 1\n```\n" +
		"<!-- readme-test: needs DOCTEST_PG a PostgreSQL URL -->\n```sh\necho pg=$DOCTEST_PG\n```\n"
	res, err, out := play(t, md, func(o *Options) { o.Env = append(os.Environ(), "DOCTEST_PG=") })
	require.NoError(t, err, out)
	require.Equal(t, 0, res.Ran)
	require.Equal(t, []string{"T.md:2: takes an hour", "T.md:6: DOCTEST_PG unset: a PostgreSQL URL"}, res.Skipped)
	require.Contains(t, out, "== T.md:6: SKIP (DOCTEST_PG is not set: a PostgreSQL URL)")

	res, err, out = play(t, md, func(o *Options) { o.Env = append(os.Environ(), "DOCTEST_PG=postgres://x") })
	require.NoError(t, err, out)
	require.Equal(t, 1, res.Ran)
	require.Contains(t, out, "pg=postgres://x")
}

func TestADeadlineEndsAHungBlock(t *testing.T) {
	start := time.Now()
	_, err, _ := play(t, "```sh\nsleep 60\n```\n", func(o *Options) { o.BlockTimeout = 500 * time.Millisecond })
	require.ErrorContains(t, err, "T.md:1: still running after 500ms")
	require.Less(t, time.Since(start), 30*time.Second, "the session's processes were killed, not waited for")
}

func TestPortsAreRewrittenAndCheckedFree(t *testing.T) {
	_, err, out := play(t, "```sh\necho localhost:6632/health localhost:66320\n# → localhost:7777/health localhost:66320\n```\n",
		func(o *Options) { o.Ports = map[string]string{"6632": "7777"} })
	require.NoError(t, err, out)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err, _ = play(t, "```text\nlocalhost:1\n```\n```sh\ncurl -s 127.0.0.1:"+strconv.Itoa(port)+"/\n```\n",
		func(o *Options) { o.CheckPorts = true })
	require.ErrorContains(t, err, "T.md:4: port "+strconv.Itoa(port)+", which this block uses, is taken")
}

func TestBackgroundBlockRunsUntilStopped(t *testing.T) {
	dir := t.TempDir()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := os.Stat(dir + "/bg.pid"); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable) // not up yet, as a server before it listens
		}
	}))
	defer srv.Close()
	md := "<!-- readme-test: background " + srv.URL + "/health -->\n```sh\necho $$ >bg.pid\nsleep 600\n```\n" +
		"```sh\nkill -0 $(cat bg.pid) && echo alive\n# → alive\n```\n" +
		"<!-- readme-test: stop -->\n```sh\nkill -0 $(cat bg.pid) 2>/dev/null || echo gone\n# → gone\n```\n"
	res, err, out := play(t, md, func(o *Options) { o.Dir = dir })
	require.NoError(t, err, out)
	require.Equal(t, 3, res.Ran)
	require.Contains(t, out, "stopping the background block of T.md:2 with Ctrl-C")
}

func TestBackgroundBlockThatExitsOrIgnoresCtrlC(t *testing.T) {
	_, err, _ := play(t, "<!-- readme-test: background http://127.0.0.1:1/ -->\n```sh\necho cannot bind >&2; exit 3\n```\n", nil)
	require.ErrorContains(t, err, "T.md:2: the background block exited (exit status 3) before http://127.0.0.1:1/ answered")
	require.ErrorContains(t, err, "cannot bind")

	// The URL answers once the block has set its trap, as a server answers once it listens.
	dir := t.TempDir()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := os.Stat(dir + "/ready"); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	start := time.Now()
	_, err, out := play(t, "<!-- readme-test: background "+srv.URL+" -->\n```sh\ntrap '' INT\ntouch ready\nsleep 600\n```\n<!-- readme-test: stop -->\n```sh\ntrue\n```\n",
		func(o *Options) { o.Dir, o.StopTimeout = dir, time.Second })
	require.ErrorContains(t, err, "T.md:8: stopping the background block of line 2: processes of its group still ran 1s after Ctrl-C", out)
	require.Less(t, time.Since(start), 30*time.Second)
}

func TestTheSessionKillsWhatItsBlocksLeftRunning(t *testing.T) {
	dir := t.TempDir()
	_, err, out := play(t, "```sh\nsleep 600 >/dev/null 2>&1 &\necho $! >left.pid\n```\n", func(o *Options) { o.Dir = dir })
	require.NoError(t, err, out)
	pid, err := os.ReadFile(dir + "/left.pid")
	require.NoError(t, err)
	// Killed, though its reaper (init, or a container's) may take a moment to collect it.
	require.Eventually(t, func() bool {
		st, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/stat")
		return os.IsNotExist(err) || strings.Contains(string(st), ") Z ")
	}, 10*time.Second, 20*time.Millisecond, "the block's background sleep was killed with the session")
}

func TestAFailingLastCommandIsReportedAsTheBlocksEnd(t *testing.T) {
	_, err, out := play(t, "```sh\necho x\ntest -e nothing-here && echo y\n```\n", nil)
	require.ErrorContains(t, err, "T.md:1: a command failed")
	require.Contains(t, out, "doctest: the block's last command ended with exit status 1")
}
