package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// The machine around a run: on a shared box the load of other processes moves every figure,
// so each report carries how busy the host was (docs/benchmarks.md gives the load average
// next to every number for the same reason).

// LoadAvg is /proc/loadavg's 1-, 5- and 15-minute load averages (runnable plus
// uninterruptible tasks, so a box waiting on its disk counts as loaded too).
type LoadAvg struct {
	One     float64 `json:"1m"`
	Five    float64 `json:"5m"`
	Fifteen float64 `json:"15m"`
}

// ReadLoadAvg reads /proc/loadavg.
func ReadLoadAvg() (LoadAvg, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return LoadAvg{}, fmt.Errorf("read load average: %w", err)
	}
	return parseLoadAvg(b)
}

// parseLoadAvg reads the first three fields of /proc/loadavg ("0.81 1.52 2.94 1/87 11877").
func parseLoadAvg(b []byte) (LoadAvg, error) {
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return LoadAvg{}, fmt.Errorf("loadavg has %d fields: %w", len(f), ErrBadResponse)
	}
	var v [3]float64
	for i := range v {
		x, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return LoadAvg{}, fmt.Errorf("loadavg field %d %q: %w", i+1, f[i], ErrBadResponse)
		}
		v[i] = x
	}
	return LoadAvg{One: v[0], Five: v[1], Fifteen: v[2]}, nil
}

// ReadHostCPU samples the CPU time every core spent busy since boot, from the aggregate "cpu"
// line of /proc/stat, as a ProcSample (CPUTicks only) so CPUPercent turns two samples into
// cores busy × 100.
func ReadHostCPU() (ProcSample, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return ProcSample{}, fmt.Errorf("read host cpu: %w", err)
	}
	busy, err := parseHostBusyTicks(b)
	if err != nil {
		return ProcSample{}, err
	}
	return ProcSample{CPUTicks: busy, At: time.Now()}, nil
}

// parseHostBusyTicks sums user, nice, system, irq, softirq and steal of the "cpu" line
// (proc(5): user nice system idle iowait irq softirq steal guest guest_nice, in USER_HZ).
// idle and iowait are not busy; guest time is already inside user and nice. Steal counts as
// busy: on a VM it is CPU the host gave to someone else, which a run competes with as much
// as with a local process.
func parseHostBusyTicks(stat []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 9 {
			return 0, fmt.Errorf("proc stat cpu line has %d fields: %w", len(f), ErrBadResponse)
		}
		var busy int64
		for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("proc stat cpu field %d %q: %w", i, f[i], ErrBadResponse)
			}
			busy += v
		}
		return busy, nil
	}
	return 0, fmt.Errorf("proc stat without a cpu line: %w", ErrBadResponse)
}
