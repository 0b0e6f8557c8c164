// Package ready owns the ready set of the broker's read path: per (queue,
// consumer group), the partitions that probably have work for the group, so
// that a wildcard or discovery pop finds the oldest ready partition without
// scanning every partition (seed 004: "gives out the oldest ready partition
// first").
//
// It must not know about queues, partitions, cursors or leases: a Set is
// generic over its members (the broker's *partition), keyed by µs timestamps
// the broker computes. Everything the set says is a hint: the broker
// re-verifies under the partition lock at claim time, so a stale entry only
// costs one wasted look.
//
// A member is in one of three places: ready (ordered by the µs timestamp of
// its oldest unconsumed work, approximate on purpose, seed 000), deferred
// (not before a µs time: a live lease's expiry, a delayedProcessing or
// windowBuffer hold; promoted to ready when that time passes) or in flight
// (taken by a pop that is claiming it). Members with nothing pending have no
// entry. Each touch bumps the entry's sequence number; a pop finishing an
// entry it took applies its Verdict only if nothing touched the entry
// meanwhile, so a push that lands during a claim is never lost.
//
// A Set's mutex is a leaf of the broker's lock order: it is taken under the
// queue and partition locks, never the other way round, and no callback runs
// under it.
package ready
