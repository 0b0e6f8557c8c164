//go:build peers

package main

import "github.com/combmq/comb/bench/peers"

// Built with -tags peers (`make comb-bench`: bin/comb-bench), comb bench also drives Redis
// and NATS; the default binary, the one that serves, links neither client (issue 26).
func init() { peers.Register() }
