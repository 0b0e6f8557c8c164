// Package crashtest proves comb's durability promises end to end by killing a real
// `comb serve` process with SIGKILL at random moments. It owns no production code:
// everything lives in test files behind the `crash` build tag, run by `make crashtest`
// (go test -tags crash -run Crash ./...).
//
// What the harness promises to check after every kill and restart (issue 5):
//
//   - every push answered 201 is present exactly once, with the message id the answer
//     gave, in push order per (partition, producer); found by draining the queue with a
//     fresh consumer group (subscriptionMode all, autoAck) from the beginning;
//   - no message whose ack was answered success is delivered again to that group: a
//     delivery counts as a violation only when its pop was sent after the ack's answer
//     arrived (a logical clock orders the two);
//   - no cursor is past its partition's high-water mark (consumer-group lag is never
//     negative);
//   - `comb fsck` on the killed directory exits 0, or 1 with nothing worse than a torn
//     tail or a stale index (both repaired by the next start);
//   - pushes whose answer was lost in the kill are re-sent with the same transactionIds
//     after the restart; the broker's dedup must give each of them exactly one message.
//   - streams cycles (issue 12, streams_test.go) are all-or-nothing: per source partition
//     the sink holds one chain of cycles, the state is the fold of exactly those, no source
//     message is folded twice, every cycle answered success:true survives, and at the end
//     every stored source message is in exactly one cycle.
//
// It also holds the end-to-end damage tests on a stopped data directory (garbage tail,
// flipped bit in a sealed file, deleted or truncated index, cursor newer than the data)
// and a `comb replay` from a stopped server into a running one.
//
// It knows the HTTP API, the `comb` command line and the `comb fsck --json` shape, and
// imports no comb package: it judges the binary the way an operator would.
//
// Knobs (environment): CRASH_KILLS (default 5; the local target is 100), CRASH_SEED
// (default: time-based, logged), CRASH_PUSHERS (default 16), CRASH_CONSUMERS (default 8),
// CRASH_MAX_RUN_MS (longest run between kills, default 1500), CRASH_STREAMS_CONSUMERS
// (default 2), CRASH_FLUSH_MS (the server's --flush-interval in ms; unset: its default).
package crashtest
