package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Issue 25, "Errors that hide the mistake": a refused flag or environment value prints one line
// naming it, what a valid value looks like, and where the full list is; nothing is created.
func TestServeExplainsABadValueInTwoLines(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"duration without a unit", []string{"--idle-evict", "5"}, "",
			`comb serve: --idle-evict "5": want a duration with a unit, like 500ms, 30s, 5m or 1h`},
		{"bool from Queen's environment", nil, "JWT_ENABLED=yes",
			`comb serve: JWT_ENABLED="yes" (--jwt-enabled): want true or false`},
		{"duration from the environment", nil, "COMB_IDLE_EVICT=5",
			`comb serve: COMB_IDLE_EVICT="5" (--idle-evict): want a duration with a unit, like 500ms, 30s, 5m or 1h`},
		{"integer", []string{"--max-batch", "x"}, "",
			`comb serve: --max-batch "x": want a whole number, like 10000`},
		{"negative batch", []string{"--max-batch", "-5"}, "",
			`comb serve: --max-batch -5: want at least 1 message, like 10000`},
		{"zero batch", []string{"--max-batch", "0"}, "",
			`comb serve: --max-batch 0: want at least 1 message, like 10000`},
		{"negative flush interval", []string{"--flush-interval", "-1s"}, "",
			`comb serve: --flush-interval -1s: want a positive duration, like 30s`},
		{"sync mode", []string{"--sync", "sometimes"}, "",
			`comb serve: --sync "sometimes": want always, interval or never`},
		{"size suffix", []string{"--max-body", "5XB"}, "",
			`comb serve: --max-body "5XB": unknown suffix "XB"; want bytes or a number with a suffix like 64MiB, 512KiB or 1GB`},
		{"log level", []string{"--log-level", "loud"}, "",
			`comb serve: --log-level "loud": want trace, debug, info, warn or error`},
		{"address without a port", []string{"--addr", "nonsense"}, "",
			`comb serve: --addr "nonsense": want host:port, like 127.0.0.1:6632 or :6632`},
		{"port out of range", []string{"--addr", "127.0.0.1:99999"}, "",
			`comb serve: --addr "127.0.0.1:99999": port "99999" is not a number from 0 to 65535`},
		{"mistyped flag name", []string{"--idle-evit", "5m"}, "",
			`comb serve: unknown flag -idle-evit (did you mean --idle-evict?)`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "never-made")
			args := append([]string{"serve", "--data-dir", dir}, c.args...)
			if c.args == nil || c.args[0] != "--addr" {
				args = append(args, "--addr", freeAddr(t))
			}
			cmd := combCmd(args...)
			if c.env != "" {
				cmd.Env = append(cmd.Env, c.env)
			}
			out, err := cmd.CombinedOutput()
			require.Error(t, err)
			require.Equal(t, 2, cmd.ProcessState.ExitCode())
			require.Equal(t, c.want+"\nsee comb serve -h\n", string(out))
			require.NoDirExists(t, dir, "nothing is created before every value was checked")
		})
	}
}

// The port of --addr is tried before the data directory is made: a port another process holds
// is refused at once rather than after a log replay.
func TestServeRefusesAHeldPortBeforeOpeningTheDataDirectory(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	dir := filepath.Join(t.TempDir(), "never-made")
	code, _, stderr := runComb(t, "serve", "--addr", ln.Addr().String(), "--data-dir", dir)
	require.Equal(t, 2, code)
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	require.Len(t, lines, 2)
	require.Equal(t, `comb serve: --addr "`+ln.Addr().String()+`": cannot listen there: bind: address already in use (another comb, or `+"`make run`"+`, may hold it)`, lines[0])
	require.NoDirExists(t, dir)
}

// -h still lists every flag, and the sizes read as sizes.
func TestServeHelpListsFlagsWithHumanSizes(t *testing.T) {
	code, _, stderr := runComb(t, "serve", "-h")
	require.Equal(t, 0, code)
	require.Contains(t, stderr, "(default 64MiB)")
	require.NotContains(t, stderr, "67108864")
	require.Greater(t, strings.Count(stderr, "\n  -"), 40, "the full list")
}

func TestByteSizePrintsTheLargestWholeUnit(t *testing.T) {
	for in, want := range map[int64]string{64 << 20: "64MiB", 1 << 30: "1GiB", 1536: "1536", 512 << 10: "512KiB", 1000: "1000"} {
		s := byteSize(in)
		require.Equal(t, want, s.String(), "%d", in)
		var back byteSize
		require.NoError(t, back.Set(s.String()))
		require.Equal(t, in, int64(back), "String reads back")
	}
}

func TestDashboardURL(t *testing.T) {
	require.Equal(t, "http://127.0.0.1:6632/", dashboardURL(&net.TCPAddr{IP: net.IPv4zero, Port: 6632}, false))
	require.Equal(t, "https://127.0.0.1:7000/", dashboardURL(&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 7000}, true))
	require.Equal(t, "http://[::1]:7000/", dashboardURL(&net.TCPAddr{IP: net.IPv6loopback, Port: 7000}, false))
	require.Equal(t, "http://127.0.0.1:7000/", dashboardURL(&net.TCPAddr{IP: net.IPv6unspecified, Port: 7000}, false))
}

// The other verbs answer a bad flag the same way.
func TestOtherVerbsExplainABadFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dump", "--queue"}, "comb dump: --queue needs a value\nsee comb dump -h\n"},
		{[]string{"fsck", "--bogus", "x"}, "comb fsck: unknown flag -bogus\nsee comb fsck -h\n"},
		{[]string{"token", "--exp"}, "comb token: --exp needs a value: want a duration with a unit, like 500ms, 30s, 5m or 1h\nsee comb token -h\n"},
	} {
		_, _, stderr := runComb(t, c.args...)
		require.Equal(t, c.want, stderr, c.args)
	}
}
