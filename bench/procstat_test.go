package bench

import (
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStatusMemory(t *testing.T) {
	status := "Name:\tcomb\nVmPeak:\t 1000 kB\nVmHWM:\t   20480 kB\nVmRSS:\t   10240 kB\n" +
		"RssAnon:\t    6144 kB\nRssFile:\t    4000 kB\nRssShmem:\t      96 kB\nThreads:\t5\n"
	rss, hwm, anon, file := parseStatusMemory([]byte(status))
	assert.Equal(t, int64(10240*1024), rss)
	assert.Equal(t, int64(20480*1024), hwm)
	assert.Equal(t, int64(6144*1024), anon)
	assert.Equal(t, int64(4000*1024), file)
}

// A kernel before 4.5 writes no RssAnon or RssFile: both read as 0, VmRSS as before.
func TestParseStatusMemoryOldKernel(t *testing.T) {
	rss, hwm, anon, file := parseStatusMemory([]byte("VmHWM:\t 8 kB\nVmRSS:\t 4 kB\n"))
	assert.Equal(t, [4]int64{4096, 8192, 0, 0}, [4]int64{rss, hwm, anon, file})
}

func TestParseStatTicks(t *testing.T) {
	cases := []struct {
		name    string
		stat    string
		want    int64
		wantErr bool
	}{
		{"plain name: utime 7 + stime 5", "42 (comb) S 1 42 42 0 -1 4194560 100 0 0 0 7 5 0 0 20 0 8 0", 12, false},
		{"name with spaces and parentheses (proc(5))", "42 (a b) (c)) R 1 42 42 0 -1 0 0 0 0 0 300 200 0 0 20 0 1 0", 500, false},
		{"no name", "42 comb S 1", 0, true},
		{"truncated", "42 (comb) S 1 2 3", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatTicks([]byte(tc.stat))
			if tc.wantErr {
				require.ErrorIs(t, err, ErrBadResponse)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestCPUPercent(t *testing.T) {
	t0 := time.Unix(100, 0)
	a := ProcSample{CPUTicks: 1000, At: t0}
	b := ProcSample{CPUTicks: 1300, At: t0.Add(2 * time.Second)}
	assert.InDelta(t, 150.0, CPUPercent(a, b), 1e-9, "3 s of CPU in 2 s of wall time is 1.5 cores")
	assert.Equal(t, 0.0, CPUPercent(b, b), "no wall time")
}

// Issue 14's "CPU per 100-message push request": the server's CPU over the window, per
// request of the window.
func TestCPUMicrosPer(t *testing.T) {
	a := ProcSample{CPUTicks: 1000}
	b := ProcSample{CPUTicks: 1450}
	assert.InDelta(t, 300.0, CPUMicrosPer(a, b, 15_000), 1e-9, "4.5 s of CPU over 15,000 requests")
	assert.Equal(t, 0.0, CPUMicrosPer(a, b, 0), "no requests, no figure")
}

func TestListenInodes(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:19E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0 100 0 0 10 0
   1: 0100007F:19E8 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 2222 1 0 20 4 30 10 -1
   2: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3333 1 0 100 0 0 10 0
`
	assert.Equal(t, []string{"1111"}, listenInodes([]byte(table), 6632), "only the LISTEN row of port 6632 (0x19E8), not its connections")
	assert.Equal(t, []string{"3333"}, listenInodes([]byte(table), 8080))
	assert.Empty(t, listenInodes([]byte(table), 6379))
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{"127.0.0.1": true, "127.3.2.1": true, "::1": true, "localhost": true, "10.0.0.1": false, "example.com": false} {
		assert.Equal(t, want, IsLoopback(host), host)
	}
}

func TestFindListenerPIDFindsThisProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	pid, err := FindListenerPID(ln.Addr().(*net.TCPAddr).Port)
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), pid)

	s, err := ReadProc(pid)
	require.NoError(t, err)
	assert.Positive(t, s.RSSBytes)
	assert.GreaterOrEqual(t, s.PeakRSSBytes, s.RSSBytes)
}

func TestFindListenerPIDWithoutListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	_, err = FindListenerPID(port)
	require.ErrorIs(t, err, ErrNoServerProcess)
}
