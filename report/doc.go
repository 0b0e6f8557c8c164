// Package report computes the read-side answers of the admin routes and
// /metrics: consumer groups and lag (spec 7.6), /metrics counters (8.2, 8.3),
// resources (8.4), the message list and detail (8.5), the DLQ listing (8.6),
// the dashboard's status routes and per-minute series (8.7) and the storage
// figures (GET /api/v1/storage). httpapi serves them through its Reports
// interface; *Reports has every method it lists.
//
// It reads the broker only through broker.View: data snapshots and read-only
// handles (QueueView, PartitionView, DLQLog) whose methods take the engine's
// locks themselves. It must not know the engine's internals (its lock order,
// its structures), nor anything of HTTP; it changes no broker state. What it
// keeps of its own are caches that make a repeated ask cheap (the DLQ indexes
// of msgdlq.go and dlqcount.go, the throughput sample of resources.go), so
// one Reports is built per broker (cmd/comb serve) and shared.
//
// Everything is computed when asked, from memory except the message reads,
// whose cost each report's doc comment bounds: these are admin routes, not
// hot paths.
package report
