package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestServeProcs(t *testing.T) {
	cases := []struct {
		name        string
		flag, procs int
		envSet      bool
		want        int
	}{
		{"default: one P more than the runtime's count (the committer's sync keeps one)", 0, 2, false, 3},
		{"default on one CPU", 0, 1, false, 2},
		{"GOMAXPROCS in the environment is the operator's: left as it is", 0, 2, true, 0},
		{"the flag wins over the default", 4, 2, false, 4},
		{"the flag wins over the environment", 1, 8, true, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, serveProcs(c.flag, c.procs, c.envSet))
		})
	}
}

func TestCheckProcs(t *testing.T) {
	assert.Equal(t, "", checkProcs(0))
	assert.Equal(t, "", checkProcs(3))
	assert.Equal(t, "--gomaxprocs -1: want 0 (the CPUs plus one) or a count of Ps", checkProcs(-1))
}
