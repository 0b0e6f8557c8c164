// Package segment owns one partition's append-only log: the segment file
// format, appends (one segment per push), group commit across many logs,
// reads by offset, torn-tail recovery, rotation and retention by whole file.
//
// It must not know about HTTP, JSON, consumer groups or leases: a payload is
// opaque bytes and a transaction id an opaque string.
//
// The byte-level format is in docs/format.md.
package segment
