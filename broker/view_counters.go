package broker

// Counters returns the engine's counters and gauges behind /metrics (spec
// 8.2, 8.3): everything of Stats except TotalLag, which package report
// computes from the cursors. After Close only the request counters, the
// registry's sizes and the at-rest counters are filled.
func (v View) Counters() Stats {
	b := v.b
	s := Stats{
		PushRequests: b.stats.pushRequests.Load(), PushMessages: b.stats.pushMessages.Load(),
		PopRequests: b.stats.popRequests.Load(), PopMessages: b.stats.popMessages.Load(),
		AckRequests: b.stats.ackRequests.Load(), AckMessages: b.stats.ackMessages.Load(),
		AckSuccess: b.stats.ackSuccess.Load(), AckFailed: b.stats.ackFailed.Load(),
		DLQMessages: b.stats.dlqMessages.Load(), ParkedPops: b.stats.parkedPops.Load(),
		PayloadsSealed: b.rest.sealed.Load(), PayloadOpenFailures: b.rest.openFailures.Load(),
		PayloadsStoredPlain: b.rest.plainStores.Load(),
	}
	b.mu.RLock()
	s.Queues, s.Partitions, s.OpenPartitions = len(b.queues), b.nParts, b.nParts
	for _, p := range b.parts {
		if p.isDamaged() {
			s.DamagedPartitions++
		}
	}
	b.mu.RUnlock()
	if b.closed.Load() {
		return s
	}
	s.SyncLatency = b.syncHist.snapshot()
	if ll, ok := b.wal.(localLog); ok {
		s.GroupCommit = ll.l.GroupStats()
	}
	b.scaleStats(&s)
	return s
}

// scaleStats fills the issue-7 fields of s. OpenPartitions counts the logs
// holding file handles (loaded), not every partition.
func (b *Broker) scaleStats(s *Stats) {
	if b.handles != nil {
		hs := b.handles.Stats()
		s.OpenFiles, s.MaxOpenFiles, s.HandleReleases, s.OpenPartitions = hs.Open, hs.Max, hs.Releases, hs.Logs
	}
	s.EvictedPartitions = b.stats.evictions.Load()
	s.RetentionFilesDeleted = b.stats.retentionFiles.Load()
	s.RetentionBytesReclaimed = b.stats.retentionBytes.Load()
	s.RetentionCursorsMoved = b.stats.retentionCursors.Load()
}

// MessageTotals are the messages pushed and acked (or auto-acked) since Open:
// the two counters of Stats a throughput is taken from, without the rest.
func (v View) MessageTotals() (pushed, acked uint64) {
	return v.b.stats.pushMessages.Load(), v.b.stats.ackMessages.Load()
}
