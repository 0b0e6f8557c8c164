package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat; 100 on every Linux
// architecture Go supports.
const clockTicks = 100

// ProcSample is one reading of a process from /proc.
type ProcSample struct {
	RSSBytes     int64 // VmRSS
	PeakRSSBytes int64 // VmHWM
	// AnonRSSBytes and FileRSSBytes split RSSBytes (RssAnon, RssFile; Linux 4.5 on, 0
	// before): the process's own heap and stacks against pages of mapped files, which are
	// the page cache seen through a mapping (comb maps its dedup run files, docs/format.md
	// 4.3) and which the kernel reclaims under memory pressure without swapping.
	AnonRSSBytes int64
	FileRSSBytes int64
	CPUTicks     int64 // utime + stime, in 1/clockTicks s
	At           time.Time
}

// CPUPercent is the CPU used between two samples; 100 = one core busy the whole time.
func CPUPercent(a, b ProcSample) float64 {
	wall := b.At.Sub(a.At).Seconds()
	if wall <= 0 {
		return 0
	}
	return float64(b.CPUTicks-a.CPUTicks) / clockTicks / wall * 100
}

// CPUMicrosPer is the CPU time between two samples in µs, divided by n (requests); 0 when n
// is not positive. Its resolution is one tick (10 ms) over the whole window, so a window
// needs thousands of requests for a per-request figure to be exact to the µs.
func CPUMicrosPer(a, b ProcSample, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return float64(b.CPUTicks-a.CPUTicks) * (1e6 / clockTicks) / float64(n)
}

// ReadProc samples /proc/<pid>/status and /proc/<pid>/stat (pid 0 = this process).
func ReadProc(pid int) (ProcSample, error) {
	dir := "/proc/self"
	if pid > 0 {
		dir = "/proc/" + strconv.Itoa(pid)
	}
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return ProcSample{}, fmt.Errorf("read proc status: %w", err)
	}
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return ProcSample{}, fmt.Errorf("read proc stat: %w", err)
	}
	s := ProcSample{At: time.Now()}
	s.RSSBytes, s.PeakRSSBytes, s.AnonRSSBytes, s.FileRSSBytes = parseStatusMemory(status)
	if s.CPUTicks, err = parseStatTicks(stat); err != nil {
		return ProcSample{}, err
	}
	return s, nil
}

// parseStatusMemory reads VmRSS, VmHWM, RssAnon and RssFile (kB in the file) as bytes; a
// line the kernel does not write reads as 0.
func parseStatusMemory(status []byte) (rss, hwm, anon, file int64) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Text()
		var dst *int64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			dst = &rss
		case strings.HasPrefix(line, "VmHWM:"):
			dst = &hwm
		case strings.HasPrefix(line, "RssAnon:"):
			dst = &anon
		case strings.HasPrefix(line, "RssFile:"):
			dst = &file
		default:
			continue
		}
		f := strings.Fields(line)
		if len(f) >= 2 {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				*dst = kb * 1024
			}
		}
	}
	return rss, hwm, anon, file
}

// parseStatTicks returns utime + stime (fields 14 and 15 of proc(5)). The command name (field
// 2) may hold spaces and parentheses, so fields are counted from the last ')'.
func parseStatTicks(stat []byte) (int64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("proc stat without command name: %w", ErrBadResponse)
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 13 {
		return 0, fmt.Errorf("proc stat has %d fields after the name: %w", len(f), ErrBadResponse)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("proc stat utime/stime: %w", ErrBadResponse)
	}
	return u + s, nil
}

// IsLoopback reports whether host (a name or an IP, no port) is this machine's loopback.
func IsLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// FindListenerPID finds the process listening on TCP port, by matching the socket inode of a
// LISTEN row in /proc/net/tcp{,6} with the socket links under /proc/*/fd. Returns an error
// wrapping ErrNoServerProcess when nothing matches (for example when the server runs as
// another user and its fds are unreadable).
func FindListenerPID(port int) (int, error) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, ino := range listenInodes(b, port) {
			inodes[ino] = true
		}
	}
	if len(inodes) == 0 {
		return 0, fmt.Errorf("port %d: no listening socket: %w", port, ErrNoServerProcess)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		fds, err := os.ReadDir(p + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(p + "/fd/" + fd.Name())
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				if pid, err := strconv.Atoi(filepath.Base(p)); err == nil {
					return pid, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("port %d: socket owner not visible: %w", port, ErrNoServerProcess)
}

// listenInodes returns the inodes of rows in LISTEN state (0A) whose local port is port, from
// the text of /proc/net/tcp or tcp6 (columns: sl local_address rem_address st ... inode).
func listenInodes(table []byte, port int) []string {
	var out []string
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(bytes.NewReader(table))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "0A" || !strings.HasSuffix(f[1], want) {
			continue
		}
		out = append(out, f[9])
	}
	return out
}
