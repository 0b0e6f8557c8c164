// Package bench is comb's load generator. It drives a broker through the Queen v1 HTTP API
// (spec sections 1 push, 3 pop, 4 ack), so it measures comb or any Queen-compatible server the
// same way; package bench/peers drives the two peers a user would otherwise pick on one
// machine (Redis Streams and NATS JetStream) with the same workload shapes through their
// official Go clients, registered (RegisterDriver) only in bin/comb-bench, so the server
// binary links neither client nor anything else a benchmark needs beyond bench itself.
//
// What it owns:
//   - the workloads: push, consume, e2e, fanout and longpoll (config.go, run.go, workers.go),
//     and cycle with its baseline transaction (cycle.go: streams cycles, spec 10, issue 12);
//   - the Driver seam, comb's implementation (driver_http.go) and the registry of the peers'
//     (run.go: RegisterDriver);
//   - measurement: HDR histograms (hist.go) of request and end-to-end latency, counters, the open-loop
//     timeline that keeps coordinated omission from hiding latency (schedule.go), sampling at
//     the window's edges (probe.go) of a local server's RSS and CPU from /proc (procstat.go),
//     of the host's busy CPU and load average (hoststat.go), and of a comb server's sync
//     counter from its /metrics/prometheus (prom.go), which give CPU µs and syncs per request;
//   - the report: text, one JSON object, and the markdown table of docs/benchmarks.md;
//   - the same-round comparison of two comb binaries (issue 14): the interleaving and the
//     median ratios (compare.go, compare_report.go), and the `comb serve` child process each
//     run starts on a fresh data directory and a free loopback port (server.go,
//     compare_binaries.go).
//
// What it must not know about: comb's internals. It imports nothing of comb's; everything it
// learns about a server comes over the wire, from /proc, or from the command line it starts
// a comb binary with. That is what makes the comparison with Queen-compatible servers, with
// the peers and with another build of comb honest.
//
// Units: latencies are recorded in microseconds and reported in milliseconds; rates are
// messages per second; MB is 10^6 bytes; payload sizes are bytes of the JSON value pushed.
//
// Payload shape (payload.go): every message carries its intended send time so a consumer can
// compute end-to-end latency without a side channel:
//
//	{"t":1764374400123456789,"pad":"xxxx…"}   // t = send time, Unix ns, a 19-byte field (left-padded with spaces)
//
// padded to exactly the requested size. Sizes below 34 bytes carry no time (a JSON string of
// x's); the latency workloads reject them.
package bench
