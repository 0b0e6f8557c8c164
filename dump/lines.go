package dump

// The "type" of each dump line, the field a jq filter selects on
// (`select(.type=="record")`). Part of the output format: docs/operations.md
// and replay's reading of a dump file depend on these exact strings.
const (
	TypePartition   = "partition"    // one per log, before its segments and records
	TypeSegment     = "segment"      // one per segment (--what segments)
	TypeRecord      = "record"       // one per record (--what records); Record
	TypeIndex       = "index"        // one per index entry (--what index)
	TypeCommitLog   = "commitlog"    // one per commit-log entry (--commit-log)
	TypeStreamQuery = "stream_query" // the stream query (--stream-query)
	TypeStreamShard = "stream_shard" // each of its shards
	TypeStreamRow   = "stream_row"   // each shard's rows
)
