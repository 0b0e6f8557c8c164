package main

import (
	"bytes"
	"flag"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestByteSizeAcceptsBytesAndSuffixes(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1048576", 1 << 20, true},
		{"64MiB", 64 << 20, true},
		{"64mib", 64 << 20, true},
		{"64M", 64 << 20, true},
		{"64MB", 64e6, true},
		{"512KiB", 512 << 10, true},
		{"1GiB", 1 << 30, true},
		{" 10 KB ", 10e3, true},
		{"", 0, false},
		{"MiB", 0, false},
		{"64XB", 0, false},
		{"0", 0, false},
		{"4GiB", 0, false},
		{"-5", 0, false},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			var s byteSize
			err := s.Set(c.in)
			if !c.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, int64(s))
		})
	}
}

func TestEnvironmentFillsFlagsNotGiven(t *testing.T) {
	newFS := func() (*flag.FlagSet, *string, *time.Duration, *byteSize) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		addr := fs.String("addr", ":6632", "")
		fs.String("data-dir", "./comb-data", "")
		fs.String("sync", "always", "")
		fs.Duration("sync-interval", 10*time.Millisecond, "")
		cp := fs.Duration("checkpoint-interval", 5*time.Millisecond, "")
		fs.String("log-level", "info", "")
		mb := byteSize(64 << 20)
		fs.Var(&mb, "max-body", "")
		fs.Int("max-batch", 10000, "")
		return fs, addr, cp, &mb
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	fs, addr, cp, mb := newFS()
	require.NoError(t, fs.Parse([]string{"--addr", "127.0.0.1:1"}))
	require.NoError(t, applyEnv(fs, env(map[string]string{"COMB_ADDR": "0.0.0.0:2", "COMB_CHECKPOINT_INTERVAL": "7ms", "COMB_MAX_BODY": "1MiB"})))
	require.Equal(t, "127.0.0.1:1", *addr, "a flag wins over the environment")
	require.Equal(t, 7*time.Millisecond, *cp)
	require.Equal(t, int64(1<<20), int64(*mb))

	fs, addr, _, _ = newFS()
	require.NoError(t, fs.Parse(nil))
	require.NoError(t, applyEnv(fs, env(map[string]string{"PORT": "7000"})))
	require.Equal(t, "0.0.0.0:7000", *addr, "PORT/HOST are the fallback of spec 0.1")

	fs, addr, _, _ = newFS()
	require.NoError(t, fs.Parse(nil))
	require.NoError(t, applyEnv(fs, env(map[string]string{"HOST": "127.0.0.1", "COMB_ADDR": ""})))
	require.Equal(t, "127.0.0.1:6632", *addr)

	fs, _, _, _ = newFS()
	require.NoError(t, fs.Parse(nil))
	require.ErrorContains(t, applyEnv(fs, env(map[string]string{"COMB_SYNC_INTERVAL": "soon"})), "COMB_SYNC_INTERVAL")
}

func TestDispatch(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 2, dispatch(nil, &out, &errOut), "no verb")
	require.Contains(t, errOut.String(), "usage: comb <verb>")

	errOut.Reset()
	require.Equal(t, 2, dispatch([]string{"frobnicate"}, &out, &errOut), "unknown verb")
	require.Contains(t, errOut.String(), `unknown verb "frobnicate"`)

	out.Reset()
	require.Equal(t, 0, dispatch([]string{"help"}, &out, &errOut))
	require.Contains(t, out.String(), "serve")

	require.Equal(t, 2, runServe([]string{"--sync", "sometimes"}))
	require.Equal(t, 2, runServe([]string{"extra-arg"}))
	require.Equal(t, 0, runServe([]string{"-h"}))
}

func TestPprofAddressMustBeLoopback(t *testing.T) {
	cases := []struct {
		name, addr string
		ok         bool
	}{
		{"ipv4 loopback", "127.0.0.1:6060", true},
		{"ipv6 loopback", "[::1]:6060", true},
		{"localhost", "localhost:0", true},
		{"other 127/8 address", "127.0.0.2:6060", true},
		{"all interfaces refused", ":6060", false},
		{"wildcard ipv4 refused", "0.0.0.0:6060", false},
		{"public address refused", "10.1.2.3:6060", false},
		{"host name refused", "example.com:6060", false},
		{"missing port", "127.0.0.1", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkPprofAddr(c.addr)
			if c.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

func TestPprofServesProfilesOnItsOwnListener(t *testing.T) {
	at, stop, err := startPprof("127.0.0.1:0")
	require.NoError(t, err)
	defer stop()
	defer runtime.SetBlockProfileRate(0)
	defer runtime.SetMutexProfileFraction(0)
	resp, err := http.Get("http://" + at.String() + "/debug/pprof/mutex?debug=1")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), "mutex")
}
