// Package dump prints a comb data directory as JSON lines (comb dump), read
// only: one object a line, its "type" one of lines.go's constants
// (partition, segment, record, index; commitlog with --commit-log;
// stream_query, stream_shard, stream_row with --stream-query), usable with jq
// and read back by package replay.
//
// Each log is printed as the server would serve it after a restart (package
// datadir's View.EachRecovered): the segments of its files below their
// durable end, then the segments only the commit log holds, whose lines carry
// the entry's "lsn"; unsynced bytes past the durable end are never read. It
// never writes to the directory and takes no lock, so it is safe on a live
// server's directory (the newest segment being appended may then be cut
// short). Times are RFC 3339 with microseconds, UTC (createdAt), with the same
// instant as µs since the epoch in the *Micros fields.
//
// It owns the output format only: reading the directory is datadir's, the
// formats it decodes are the storage packages' (segment, index, commitlog,
// walentry, streams). It must not know about fsck's verdicts or HTTP.
package dump
