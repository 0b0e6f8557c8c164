package broker

import "github.com/combmq/comb/segment"

// logSegmentRecovery logs what a segment log repaired on its own outside the
// start-up scan (segment.Options.OnRecover: a torn tail cut at a lazy load, a
// dedup.idx rebuilt because it was damaged), and a DLQ log's recovery. Issue
// 10: the words say whether cut bytes can have been acknowledged data and
// where they were kept.
func (b *Broker) logSegmentRecovery(dir string, rep *segment.RecoveryReport) {
	ev := b.log.Warn().Str("dir", dir)
	if rep.TruncatedBytes > 0 {
		ev = ev.Str("file", rep.File).Int64("truncatedBytes", rep.TruncatedBytes).Int64("at", rep.TruncatedAt).
			Uint64("lostFirst", rep.LostFirstOffset).Uint64("lostLast", rep.LostLastOffset).
			Str("tail", rep.TailText()).Str("keptAt", rep.KeptAt)
	}
	if len(rep.IndexesRebuilt) > 0 {
		ev = ev.Strs("indexesRebuilt", rep.IndexesRebuilt)
	}
	if rep.DedupRebuilt != "" {
		ev = ev.Str("dedup", rep.DedupRebuilt)
	}
	ev.Msg("segment log repaired")
}
