package dump

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/google/uuid"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/streams"
	"github.com/combmq/comb/vfs"
)

// Dump line shapes of --stream-query: the query, then each shard and its rows
// as the snapshot files hold them (cycles since the last flush pass are in the
// commit log only: the server replays them at start).
type (
	dumpStreamQuery struct {
		Type       string `json:"type"` // TypeStreamQuery
		QueryID    string `json:"queryId"`
		Name       string `json:"name"`
		Source     string `json:"sourceQueue"`
		Sink       string `json:"sinkQueue,omitempty"`
		ConfigHash string `json:"configHash"`
		ResetLSN   uint64 `json:"resetLsn,omitempty"`
		Covers     uint64 `json:"registryCovers"`
	}
	dumpStreamShard struct {
		Type        string `json:"type"` // TypeStreamShard
		QueryID     string `json:"queryId"`
		PartitionID string `json:"partitionId"`
		File        string `json:"file"`
		LSN         uint64 `json:"lsn"`
		Cycles      uint64 `json:"cycles"`
		Keys        int    `json:"keys"`
		Stale       bool   `json:"stale,omitempty"` // older than the query's reset: the server removes it
	}
	dumpStreamRow struct {
		Type        string          `json:"type"` // TypeStreamRow
		PartitionID string          `json:"partitionId"`
		Key         string          `json:"key"`
		Value       json.RawMessage `json:"value"`
		UpdatedAt   string          `json:"updatedAt"`
	}
)

// dumpStreams prints the query named name (or with that id) and its shards.
// The query is the registry file's with the commit log's later registrations
// applied, as the server's start-up applies them (a query registered since
// the last flush pass is only there); the shards are the snapshot files'.
func dumpStreams(abs, name string, enc *json.Encoder, st *Stats) error {
	f := &streams.Files{FS: vfs.OS, Root: filepath.Join(abs, streams.Dir)}
	l, err := f.Load()
	if err != nil {
		return err
	}
	v, err := datadir.Load(abs, nil)
	if err != nil {
		return err
	}
	covers := l.Registry.Covers
	for _, e := range v.WAL.Streams {
		l.Registry.Apply(e.LSN, e.Query, e.Reset)
	}
	var q *streams.Query
	for i := range l.Registry.Queries {
		if c := &l.Registry.Queries[i]; c.Name == name || uuid.UUID(c.ID).String() == name {
			q = c
		}
	}
	if q == nil {
		return errors.Join(fmt.Errorf("no stream query %q in %s or the commit log", name, f.Root), v.WAL.Unread())
	}
	qid := uuid.UUID(q.ID).String()
	if err := enc.Encode(dumpStreamQuery{Type: TypeStreamQuery, QueryID: qid, Name: q.Name, Source: q.Source, Sink: q.Sink,
		ConfigHash: q.ConfigHash, ResetLSN: q.ResetLSN, Covers: covers}); err != nil {
		return err
	}
	for i := range l.Snapshots {
		s := &l.Snapshots[i]
		if s.Query != q.ID {
			continue
		}
		pid := uuid.UUID(s.Partition).String()
		rel, _ := filepath.Rel(abs, l.Paths[i])
		if err := enc.Encode(dumpStreamShard{Type: TypeStreamShard, QueryID: qid, PartitionID: pid, File: rel, LSN: s.LSN,
			Cycles: s.Cycles, Keys: len(s.Rows), Stale: s.LSN < q.ResetLSN}); err != nil {
			return err
		}
		st.Partitions++
		for _, r := range s.Rows {
			v := json.RawMessage(r.Value)
			if !json.Valid(v) {
				v, _ = json.Marshal(string(r.Value))
			}
			at := time.UnixMicro(r.UpdatedAtMicros).UTC().Format("2006-01-02T15:04:05.000000Z")
			if err := enc.Encode(dumpStreamRow{Type: TypeStreamRow, PartitionID: pid, Key: r.Key, Value: v, UpdatedAt: at}); err != nil {
				return err
			}
			st.Records++
		}
	}
	// Not silent: a registration in an unread entry would change what was printed.
	return v.WAL.Unread()
}
