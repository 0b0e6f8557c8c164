package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Issue 10: `comb bench` without a workload prints its usage and exits 2 instead of benchmarking
// whatever listens on 127.0.0.1:6632; -h still prints the usage and exits 0.
func TestBenchWithoutAWorkloadPrintsUsage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no arguments", nil, 2, "comb bench: a workload is required"},
		{"flags only", []string{"--url", "http://127.0.0.1:1", "--duration", "1s"}, 2, "comb bench: a workload is required"},
		{"help", []string{"-h"}, 0, "usage: comb bench <push|consume|e2e|fanout|longpoll|cycle|transaction>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var code int
			out := captureStderr(t, func() { code = cmdBench(c.args) })
			require.Equal(t, c.code, code)
			require.Contains(t, out, c.want)
			require.Contains(t, out, "usage: comb bench <push|consume|e2e|fanout|longpoll|cycle|transaction> [flags]")
		})
	}
}
