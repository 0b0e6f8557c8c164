// Package lease holds the consumption rules of one (partition, consumer group):
// the lease on a claimed span, redelivery attempts, the retry budget, lease
// extension and the offset-commit semantics of acks (spec sections 3.5, 3.10,
// 4.3 to 4.6, 5.2 and 6; seed 000 "Consuming").
//
// Everything here is a pure function over a State value: no disk, no clock, no
// locks. The caller (broker/) holds the partition lock, passes the current time
// in µs, and hands the changed State to cursor.Engine, which makes it durable.
//
// The package must not know about HTTP, transaction ids, segments or how
// cursor checkpoints are stored; acks arrive already resolved to offsets.
//
// State layout in memory (and, field by field, in cursor checkpoints and
// snapshots):
//
//	Committed  last committed offset (0 = nothing consumed)
//	Lease      ID (zero = not held), WorkerID, Start..End (inclusive offsets),
//	           ExpiresAtMicros, Attempts (deliveries of this span)
//	Retries    explicit `failed` releases charged to the current span
//
// A released lease keeps Start, End and Attempts with a zero ID, so that the
// next Grant of the same span counts a redelivery (seed 000: "Redelivery caused
// by an expiry is counted as an attempt but does not consume the retry budget").
package lease
