package dump

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/combmq/comb/commitlog"
	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/layout"
	"github.com/combmq/comb/record"
	"github.com/combmq/comb/segment"
	"github.com/combmq/comb/walentry"
)

// walKindNames names the commit log's entry kinds in dump lines.
var walKindNames = map[byte]string{
	walentry.Meta: "meta", walentry.Push: "push", walentry.DLQ: "dlq", walentry.Checkpoint: "checkpoint", walentry.Tx: "tx", walentry.Note: "note", walentry.Stream: "stream",
}

// dumpCommitLog prints one `commitlog` line per entry the commit log keeps, in
// LSN order (commitlog.Inspect: read-only), so an operator sees what the
// server's recovery would replay: for a push or DLQ entry its log, offsets,
// timestamp and whether recovery appends it, followed with Payload by its
// record lines (each with the entry's "lsn"). A queue, partition or id filter
// keeps the push and DLQ entries of the selected logs only. Damage stops it
// with an error after what could be read.
func dumpCommitLog(dataDir string, v *datadir.View, logs []datadir.LogDir, names map[string]datadir.PartInfo, opts Options, enc *json.Encoder, st *Stats) error {
	filtered := opts.Queue != "" || opts.Partition != "" || opts.PartitionID != ""
	selected := map[[16]byte]datadir.LogDir{}
	for _, d := range logs {
		selected[d.ID] = d
	}
	var buf segment.ReadBuffer
	in, err := commitlog.Inspect(nil, filepath.Join(dataDir, layout.CommitLog), func(e commitlog.Entry) error {
		line := dumpWALEntry{Type: TypeCommitLog, LSN: uint64(e.LSN), Kind: walKindNames[e.Kind], Bytes: len(e.Payload)}
		if line.Kind == "" {
			line.Kind = fmt.Sprintf("kind-%d", e.Kind)
		}
		var msgs []segment.Message
		var n datadir.PartInfo
		isLog := e.Kind == walentry.Push || e.Kind == walentry.DLQ
		switch {
		case isLog:
			id, seg, err := walentry.SplitLog(e.Payload)
			d, ok := selected[id]
			if filtered && !ok {
				return nil
			}
			if err != nil {
				line.Error = err.Error()
				break
			}
			line.PartitionID, line.DLQ = datadir.IDString(id), e.Kind == walentry.DLQ
			if ok {
				n = names[d.Rel]
			} else if v.Meta != nil {
				n = v.NameOf(id, line.DLQ)
			}
			line.Queue, line.Partition = n.Queue, n.Name
			var info segment.SegmentInfo
			if info, msgs, err = segment.DecodeSegment(seg, &buf); err != nil {
				line.Error = err.Error()
				break
			}
			line.FirstOffset, line.LastOffset, line.Count = info.FirstOffset, info.FirstOffset+uint64(info.Count)-1, info.Count
			line.TsMicros, line.CreatedAt = info.TimestampMicros, formatMicros(info.TimestampMicros)
			if keep, behind := v.Rule.KeepBelow(id, line.DLQ); behind {
				replay := info.FirstOffset+uint64(info.Count) > keep
				line.Replay = &replay
			}
		case filtered:
			return nil
		case e.Kind == walentry.Meta:
			if recs, err := walentry.DecodeMeta(e.Payload); err != nil {
				line.Error = err.Error()
			} else {
				line.Records = len(recs)
			}
		}
		st.Entries++
		if err := enc.Encode(line); err != nil {
			return err
		}
		if isLog && opts.Payload && line.Error == "" {
			return dumpRecords(n, line.PartitionID, line.DLQ, line.CreatedAt, line.LSN, msgs, opts, enc, st, nil)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if in.Err != nil {
		return fmt.Errorf("commit log: %w (entries after the damage are not printed; run comb fsck)", in.Err)
	}
	if in.Tail == record.TailCorrupt {
		// Inspect reports damage with a verified batch after it as the tail
		// (the server refuses to start on it): the entries past it are unread.
		return fmt.Errorf("commit log: %s: bytes [%d,%d) are damaged and a verified batch follows them (entries after the damage are not printed; run comb fsck)", in.TailFile, in.TailStart, in.TailEnd)
	}
	return nil
}
