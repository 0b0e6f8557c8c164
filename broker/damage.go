package broker

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/combmq/comb/segment"
)

// ErrDamaged is wrapped by the error of a request that needs a damaged
// partition (HTTP 500). Its Error() is a short message for clients: it names
// the queue and partition and says to run `comb fsck`, and holds no file path.
var ErrDamaged = errors.New("partition damaged")

// damage is why a partition is out of service: the first damage its log
// reported.
type damage struct {
	err         *segment.CorruptionError
	sinceMicros int64
}

// DamagedPartition is one partition taken out of service because its log
// reported damage (a *segment.CorruptionError at Open or on a read). It stays
// out of service until a restart finds it sound (after `comb fsck --repair`).
type DamagedPartition struct {
	Queue, Partition, PartitionID string
	File                          string // base name of the damaged segment file (no directory)
	StartByte, EndByte            int64  // damaged byte range [StartByte, EndByte) in File
	FirstOffset, LastOffset       uint64 // offsets the range holds; 0,0 when unknown
	Reason                        string
	SinceMicros                   int64 // µs when the broker found it
}

// markDamaged takes p out of service if err reports on-disk damage (wraps a
// *segment.CorruptionError) and reports whether it did. The first report is
// logged at error level with the file, byte range and offsets; later ones are
// not (a damaged partition is skipped, so they are rare anyway).
//
// Out of service means: wildcard and discovery pops skip it (the queue's other
// partitions keep serving); targeted pops, pushes, acks, transactions and
// partition seeks that need it fail with ErrDamaged; retention, recovery's
// cursor clamp and the clean-shutdown summary leave it alone, so no cursor or
// file is changed on the strength of a log that cannot be read.
func (b *Broker) markDamaged(p *partition, err error) bool {
	var ce *segment.CorruptionError
	if !errors.As(err, &ce) {
		return false
	}
	d := &damage{err: ce, sinceMicros: b.now().UnixMicro()}
	if !p.damaged.CompareAndSwap(nil, d) {
		return true
	}
	b.log.Error().Str("queue", p.q.name).Str("partition", p.name).Str("partitionId", p.idStr).
		Str("file", ce.File).Int64("startByte", ce.StartByte).Int64("endByte", ce.EndByte).
		Uint64("firstOffset", ce.FirstOffset).Uint64("lastOffset", ce.LastOffset).Str("reason", ce.Reason).
		Msg("partition damaged: taken out of service until `comb fsck` repairs it and the server restarts")
	return true
}

// damagedErr returns the ErrDamaged error for p, or nil when p is sound.
func (p *partition) damagedErr() error {
	if p.damaged.Load() == nil {
		return nil
	}
	return &userError{kind: ErrDamaged, msg: fmt.Sprintf(
		"partition %q of queue %q is damaged on disk and out of service; run `comb fsck` on the data directory", p.name, p.q.name)}
}

func (p *partition) isDamaged() bool { return p.damaged.Load() != nil }

// storageErr turns an error of p's log into what the request answers: the
// ErrDamaged error when it reports damage (p is then out of service), else
// err unchanged.
func (b *Broker) storageErr(p *partition, err error) error {
	if err != nil && b.markDamaged(p, err) {
		return p.damagedErr()
	}
	return err
}

// Damaged lists the partitions out of service, by queue then partition name
// (GET /health reports them).
func (b *Broker) Damaged() []DamagedPartition {
	b.mu.RLock()
	var out []DamagedPartition
	for _, p := range b.parts {
		d := p.damaged.Load()
		if d == nil {
			continue
		}
		out = append(out, DamagedPartition{Queue: p.q.name, Partition: p.name, PartitionID: p.idStr,
			File: filepath.Base(d.err.File), StartByte: d.err.StartByte, EndByte: d.err.EndByte,
			FirstOffset: d.err.FirstOffset, LastOffset: d.err.LastOffset, Reason: d.err.Reason, SinceMicros: d.sinceMicros})
	}
	b.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Queue != out[j].Queue {
			return out[i].Queue < out[j].Queue
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}
