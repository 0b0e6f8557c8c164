package dump

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/index"
	"github.com/combmq/comb/segment"
)

// Options selects what Dump prints. Zero values mean "no filter".
type Options struct {
	Queue       string // queue name (needs the metadata journal)
	Partition   string // partition name within Queue
	PartitionID string // a partition id (the directory name); wins over Queue/Partition
	DLQ         bool   // also dump the dead-letter logs of the selected queues

	FromOffset, ToOffset uint64 // inclusive offset range
	FromMicros, ToMicros int64  // inclusive range of segment timestamps, µs since the epoch

	Segments bool // print one line per segment
	Records  bool // print one line per record
	Index    bool // print one line per index entry
	Payload  bool // include payloads in record lines
	// CommitLog prints the commit log's entries instead of the logs: one
	// `commitlog` line per entry, and with Payload the records of each push
	// and DLQ entry (what the server's recovery would replay).
	CommitLog bool
	// StreamQuery, when set, prints that stream query (a name or a query id)
	// and its shards' rows from <data>/streams instead of the logs.
	StreamQuery string
}

// Stats counts what Dump printed.
type Stats struct {
	Partitions, Segments, Records, IndexEntries, Entries int64
}

// Dump line shapes (JSON lines, one object each, usable with jq; the "type" field
// says which). Times are RFC 3339 with microseconds, UTC; *Micros fields the same
// instant as integers.
type (
	dumpPartition struct {
		Type        string `json:"type"` // TypePartition
		Queue       string `json:"queue"`
		Partition   string `json:"partition"`
		PartitionID string `json:"partitionId"`
		DLQ         bool   `json:"dlq,omitempty"`
		Dir         string `json:"dir"`
		FirstOffset uint64 `json:"firstOffset"`
		NextOffset  uint64 `json:"nextOffset"`
		Files       int    `json:"files"`
	}
	dumpSegment struct {
		Type        string `json:"type"` // TypeSegment
		PartitionID string `json:"partitionId"`
		File        string `json:"file"`
		Pos         int64  `json:"pos"`
		Bytes       int64  `json:"bytes"`
		FirstOffset uint64 `json:"firstOffset"`
		LastOffset  uint64 `json:"lastOffset"`
		Count       uint32 `json:"count"`
		CreatedAt   string `json:"createdAt"`
		TsMicros    int64  `json:"tsMicros"`
		Codec       string `json:"codec,omitempty"`
		LSN         uint64 `json:"lsn,omitempty"` // a segment only the commit log holds (file `commitlog`)
	}
	// dumpWALEntry is one commit-log entry (--commit-log).
	dumpWALEntry struct {
		Type        string `json:"type"` // TypeCommitLog
		LSN         uint64 `json:"lsn"`
		Kind        string `json:"kind"` // meta, push, dlq, checkpoint, tx
		Bytes       int    `json:"bytes"`
		Queue       string `json:"queue,omitempty"`
		Partition   string `json:"partition,omitempty"`
		PartitionID string `json:"partitionId,omitempty"` // push: the partition; dlq: the queue id
		DLQ         bool   `json:"dlq,omitempty"`
		FirstOffset uint64 `json:"firstOffset,omitempty"`
		LastOffset  uint64 `json:"lastOffset,omitempty"`
		Count       uint32 `json:"count,omitempty"`
		CreatedAt   string `json:"createdAt,omitempty"`
		TsMicros    int64  `json:"tsMicros,omitempty"`
		// Replay (push, dlq): the server's recovery appends the entry to its
		// log (false: the log's files hold it already).
		Replay  *bool  `json:"replay,omitempty"`
		Records int    `json:"records,omitempty"` // meta: metadata records in it
		Error   string `json:"error,omitempty"`   // the entry does not decode
	}
	// Record is one record line; replay reads a dump file's back
	// (replay.Options.DumpFile).
	Record struct {
		Type          string          `json:"type"` // TypeRecord
		Queue         string          `json:"queue"`
		Partition     string          `json:"partition"`
		PartitionID   string          `json:"partitionId"`
		DLQ           bool            `json:"dlq,omitempty"`
		Offset        uint64          `json:"offset"`
		ID            string          `json:"id"`
		TransactionID string          `json:"transactionId"`
		TraceID       *string         `json:"traceId"`
		ProducerSub   *string         `json:"producerSub"`
		CreatedAt     string          `json:"createdAt"`
		TsMicros      int64           `json:"tsMicros"`
		PayloadBytes  int             `json:"payloadBytes"`
		Payload       json.RawMessage `json:"payload,omitempty"` // with --payload only
		Extra         string          `json:"extra,omitempty"`   // base64; DLQ metadata
		LSN           uint64          `json:"lsn,omitempty"`     // a record only the commit log holds: its entry
	}
	dumpIndex struct {
		Type        string `json:"type"` // TypeIndex
		PartitionID string `json:"partitionId"`
		File        string `json:"file"`
		Entry       int    `json:"entry"`
		FirstOffset uint64 `json:"firstOffset"`
		LastOffset  uint64 `json:"lastOffset"`
		Pos         int64  `json:"pos"`
		TsMicros    int64  `json:"tsMicros"`
		Count       uint32 `json:"count"`
	}
)

// Run prints the selected logs of dataDir as JSON lines to w, as the server
// would serve them after recovery: the segments of each log's files below its
// durable end, then the segments only the commit log holds (their lines carry
// the entry's "lsn"); unsynced bytes past the durable end are not read. It
// never writes to dataDir and takes no lock, so it is safe on a live server's
// directory (the newest segment being appended may then be cut short). A
// filter that names a queue, partition or id the directory does not hold
// returns an error wrapping datadir.ErrNotFound. With CommitLog it prints the commit log's entries
// instead (dumpCommitLog).
func Run(dataDir string, opts Options, w io.Writer) (Stats, error) {
	var st Stats
	if !opts.Segments && !opts.Records && !opts.Index {
		opts.Segments, opts.Records = true, true
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return st, err
	}
	if err := datadir.Check(abs); err != nil {
		return st, err
	}
	if opts.StreamQuery != "" {
		bw := bufio.NewWriterSize(w, 256<<10)
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		err := dumpStreams(abs, opts.StreamQuery, enc, &st)
		if ferr := bw.Flush(); err == nil {
			err = ferr
		}
		return st, err
	}
	var want func([16]byte) bool
	if opts.Records || opts.Segments {
		want = func([16]byte) bool { return true }
	}
	v, err := datadir.Load(abs, want)
	if err != nil {
		return st, err
	}
	logs, names, err := datadir.SelectLogs(abs, v, opts.Queue, opts.Partition, opts.PartitionID, opts.DLQ || opts.CommitLog)
	if err != nil {
		return st, err
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if opts.CommitLog {
		err := dumpCommitLog(abs, v, logs, names, opts, enc, &st)
		if ferr := bw.Flush(); err == nil {
			err = ferr
		}
		return st, err
	}
	for _, d := range logs {
		if err := dumpLog(v, d, names[d.Rel], opts, enc, &st); err != nil {
			_ = bw.Flush()
			return st, fmt.Errorf("%s: %w", d.Rel, err)
		}
	}
	if err := bw.Flush(); err != nil {
		return st, err
	}
	// Not silent: records only the commit log's unread entries hold are
	// missing from what was printed.
	return st, v.WAL.Unread()
}

func dumpLog(v *datadir.View, d datadir.LogDir, n datadir.PartInfo, opts Options, enc *json.Encoder, st *Stats) error {
	files, err := datadir.ListSegFiles(d.Path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	st.Partitions++
	pid := datadir.IDString(d.ID)
	first, next := uint64(0), uint64(0)
	if len(files) > 0 {
		first = files[0].FirstOffset
	} else if f, ok := v.SmallFirst(d); ok {
		first = f // a small partition: its records are in the shared file
	}
	part := dumpPartition{Type: TypePartition, Queue: n.Queue, Partition: n.Name, PartitionID: pid, DLQ: d.DLQ, Dir: d.Rel, Files: len(files)}
	inRange := func(firstOff, lastOff uint64, ts int64) bool {
		return (opts.ToOffset == 0 || firstOff <= opts.ToOffset) && lastOff >= opts.FromOffset &&
			(opts.FromMicros == 0 || ts >= opts.FromMicros) && (opts.ToMicros == 0 || ts <= opts.ToMicros)
	}
	if len(files) > 0 {
		next = datadir.IndexEnd(d.Path, files[len(files)-1])
	}
	next, keep := v.RecoveredNext(d, next)
	if keep > 0 && (first == 0 || first >= keep) {
		first = min(keep, next) // nothing kept of the files: the log starts at keep
	}
	part.FirstOffset, part.NextOffset = first, next
	if err := enc.Encode(part); err != nil {
		return err
	}
	if opts.Index {
		for _, f := range files {
			if err := dumpIndexFile(d, f, inRange, enc, st); err != nil {
				return err
			}
		}
	}
	if !opts.Segments && !opts.Records {
		return nil
	}
	var werr error
	err = v.EachRecovered(d, opts.FromOffset, func(s datadir.SegInfo, lsn uint64, msgs []segment.Message) bool {
		last := s.FirstOffset + uint64(s.Count) - 1
		if opts.ToOffset != 0 && s.FirstOffset > opts.ToOffset {
			return false
		}
		if !inRange(s.FirstOffset, last, s.TsMicros) {
			return true
		}
		created := formatMicros(s.TsMicros)
		if opts.Segments {
			st.Segments++
			werr = enc.Encode(dumpSegment{Type: TypeSegment, PartitionID: pid, File: s.File, Pos: s.Pos, Bytes: s.Bytes,
				FirstOffset: s.FirstOffset, LastOffset: last, Count: s.Count, CreatedAt: created, TsMicros: s.TsMicros, Codec: s.Codec, LSN: lsn})
		}
		if opts.Records {
			werr = dumpRecords(n, pid, d.DLQ, created, lsn, msgs, opts, enc, st, werr)
		}
		return werr == nil
	})
	if werr != nil {
		return werr
	}
	return err
}

// dumpRecords prints the record lines of one segment's messages in the
// selected offset range.
func dumpRecords(n datadir.PartInfo, pid string, dlq bool, created string, lsn uint64, msgs []segment.Message, opts Options, enc *json.Encoder, st *Stats, werr error) error {
	for i := range msgs {
		m := &msgs[i]
		if m.Offset < opts.FromOffset || (opts.ToOffset != 0 && m.Offset > opts.ToOffset) || werr != nil {
			continue
		}
		st.Records++
		r := recordLine(n, pid, dlq, created, m, opts.Payload)
		r.LSN = lsn
		werr = enc.Encode(r)
	}
	return werr
}

func recordLine(n datadir.PartInfo, pid string, dlq bool, created string, m *segment.Message, payload bool) Record {
	r := Record{Type: TypeRecord, Queue: n.Queue, Partition: n.Name, PartitionID: pid, DLQ: dlq, Offset: m.Offset,
		ID: uuid.UUID(m.ID).String(), TransactionID: m.TransactionID, CreatedAt: created, TsMicros: m.TimestampMicros,
		PayloadBytes: len(m.Payload)}
	if m.TraceID != "" {
		s := m.TraceID
		r.TraceID = &s
	}
	if m.ProducerSub != "" {
		s := m.ProducerSub
		r.ProducerSub = &s
	}
	if payload {
		if json.Valid(m.Payload) {
			r.Payload = json.RawMessage(m.Payload)
		} else {
			// Not JSON (an encrypted payload): keep it as a JSON string of base64.
			b, _ := json.Marshal(base64.StdEncoding.EncodeToString(m.Payload))
			r.Payload = b
		}
	}
	if len(m.Extra) > 0 {
		r.Extra = base64.StdEncoding.EncodeToString(m.Extra)
	}
	return r
}

// dumpIndexFile prints the valid entries of one "<base>.idx" file, read-only.
func dumpIndexFile(d datadir.LogDir, f datadir.SegFile, inRange func(uint64, uint64, int64) bool, enc *json.Encoder, st *Stats) error {
	name := f.IndexName()
	b, err := os.ReadFile(filepath.Join(d.Path, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if index.CheckHeader(b, f.FirstOffset) != nil {
		return nil
	}
	body := b[index.HeaderSize:]
	n := index.ValidEntries(body, f.FirstOffset)
	for i := 0; i < n; i++ {
		e, _ := index.DecodeEntry(body[i*index.EntrySize:])
		if !inRange(e.Base, e.Last(), e.TimestampMicros) {
			continue
		}
		st.IndexEntries++
		if err := enc.Encode(dumpIndex{Type: TypeIndex, PartitionID: datadir.IDString(d.ID), File: name, Entry: i,
			FirstOffset: e.Base, LastOffset: e.Last(), Pos: e.Pos, TsMicros: e.TimestampMicros, Count: e.Count}); err != nil {
			return err
		}
	}
	return nil
}
