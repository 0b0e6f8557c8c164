// Package queenimport moves a Queen MQ broker's state from its PostgreSQL tables into comb
// (issue 24, `comb import --from-queen`): queues with every option, partitions with their ids,
// messages in Queen's (created_at, id) order with their ids, transactionIds, traceIds,
// payloads, createdAt and producerSub, each consumer group's cursor and live lease, the
// subscription records, the dead-letter queue, trace events and streams queries with their
// state. Verify compares the two sides.
//
// A live move (follow.go): a Follower's passes copy what reaches Queen after the snapshot,
// bounded by the start of the oldest transaction open on Queen's database and re-reading an
// overlap window, and its Cutover syncs cursors, leases and the rest once Queen's consumers
// are stopped. Jobs (job.go) runs an import, following or not, inside a serving comb: the
// /api/v1/migration/* routes (`comb import --target`, Queen's dashboard Migration view).
//
// Reading (reader.go): one REPEATABLE READ, READ ONLY transaction reads everything but the
// messages, with each partition's high-water mark (its newest (created_at, id)); messages are
// then read by keyset pagination up to that mark, one short read-only transaction per page, so
// no transaction stays open for the whole copy. Writing (importer.go) goes through the broker's
// import entry points (broker/import*.go), which take the same commit-log paths as a push, a
// configure, a pop and a dead letter. Every step is idempotent: a second run adds nothing.
//
// Queen's tables are those of Queen 0.15.1 (../shared/queen-pg/schema.sql).
package queenimport
