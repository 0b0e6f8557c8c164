package broker

import (
	"time"

	"github.com/rs/zerolog"
)

// Config configures a Broker. Zero values mean the documented defaults.
type Config struct {
	DataDir            string        // created if missing
	Sync               string        // "always" (default), "interval", "never"
	SyncInterval       time.Duration // for Sync "interval"; default 10 ms
	CheckpointInterval time.Duration // cursor journal checkpoint period; default 5 ms
	MaxSegmentFileSize int64         // bytes; default 64 MiB
	MaxBatch           int           // pop batch cap; default 10000
	Logger             zerolog.Logger

	// Now is the broker's clock; nil means time.Now. Tests inject a clock to
	// expire leases without sleeping.
	Now func() time.Time
	// WakeTick is the period on which push wake-ups of parked long-polls are
	// coalesced (seed 000 "Long-poll"); default 5 ms.
	WakeTick time.Duration
}

// Defaults applied by Open.
const (
	DefaultSyncInterval       = 10 * time.Millisecond
	DefaultCheckpointInterval = 5 * time.Millisecond
	DefaultMaxBatch           = 10000
	DefaultWakeTick           = 5 * time.Millisecond
	maxNameBytes              = 255
)

func (c Config) withDefaults() Config {
	if c.Sync == "" {
		c.Sync = "always"
	}
	if c.SyncInterval <= 0 {
		c.SyncInterval = DefaultSyncInterval
	}
	if c.CheckpointInterval <= 0 {
		c.CheckpointInterval = DefaultCheckpointInterval
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.WakeTick <= 0 {
		c.WakeTick = DefaultWakeTick
	}
	return c
}
