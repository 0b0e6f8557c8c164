package broker

import (
	"path/filepath"
	"time"

	"github.com/combmq/comb/analytics"
	"github.com/combmq/comb/layout"
)

// The per-minute series of the dashboard (spec 8.7) and of the per-minute
// Prometheus gauges (spec 8.3), kept by package analytics. What is counted,
// and where:
//
//	ingested   messages stored by a push (write_push.go), per partition group
//	popped     messages claimed by a pop (read_claim.go addClaimed), with their
//	           lag: now - the message's segment timestamp, in ms
//	processed  acks of status completed (ack.go, countAcks in ack_series.go), and autoAck pops
//	errors     acks of status failed or dlq
//
// A transaction's pushes and acks count as the same operations do (countTx, tx_series.go).
// A claim whose checkpoint then fails (a full disk) is still counted: the
// series are for charts, not for accounting.
// The rings are saved to <data>/meta/analytics at each minute boundary (the
// maintenance task's tick) and at Close.

const seriesFile = "analytics"

func (b *Broker) seriesPath() string { return filepath.Join(b.dir, layout.Meta, seriesFile) }

// openSeries loads the saved series before the registry is built, so that
// each queue adopts its own when newQueue asks for its counters. A file that
// does not load is set aside with a warning: the charts start blank.
func (b *Broker) openSeries() {
	if b.cfg.NoAnalytics {
		return
	}
	s, err := analytics.Load(b.fs, b.seriesPath())
	if err != nil {
		b.log.Warn().Err(err).Msg("analytics: the saved series do not load; starting blank")
		s = analytics.NewStore()
	}
	s.Tick(b.now())
	b.series = s
}

// tickSeries closes the minute once the clock is past it and saves the file
// (called by every maintenance tick; a no-op inside the minute).
func (b *Broker) tickSeries(now time.Time) {
	if !b.series.Tick(now) {
		return
	}
	b.saveSeries()
}

// closeSeries moves the live counters into their minute and saves the file.
func (b *Broker) closeSeries() {
	if b.series == nil {
		return
	}
	b.series.Flush(b.now())
	b.saveSeries()
}

func (b *Broker) saveSeries() {
	if err := b.series.Save(b.fs, b.seriesPath(), b.noSync()); err != nil {
		b.log.Warn().Err(err).Msg("analytics: saving the series failed; the next minute tries again")
	}
}
