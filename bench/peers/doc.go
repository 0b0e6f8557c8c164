// Package peers holds comb bench's drivers for the two peers a user would otherwise pick on
// one machine, Redis Streams (redis.go) and NATS JetStream (nats.go), through their official
// Go clients, with the same workload shapes as comb's own driver (package bench).
//
// It lives apart from bench so that the server binary links no peer client (issue 26): only a
// binary built with the build tag `peers` (`make comb-bench`, cmd/comb/bench_peers.go) imports
// it and calls Register. It must not know about comb's engine: it sees bench's Driver seam only.
package peers
