package segment

import (
	"errors"
	"time"
)

// TEMPORARY skeleton so the broker compiles; replaced by the real implementation.

var errNotYet = errors.New("segment: not implemented yet")

// Log is one partition's append-only log: a directory of segment files.
type Log struct{ dir string }

// ReadBuffer is reusable scratch for Read.
type ReadBuffer struct{ buf []byte }

// Reset drops what the buffer holds.
func (b *ReadBuffer) Reset() { b.buf = b.buf[:0] }

func Open(dir string, opts Options) (*Log, *RecoveryReport, error) {
	return nil, nil, errNotYet
}
func (l *Log) Append(tsMicros int64, recs []Record) (uint64, error) { return 0, errNotYet }
func (l *Log) Sync() error                                          { return errNotYet }
func (l *Log) Read(from uint64, maxMsgs, maxBytes int, buf *ReadBuffer) ([]Message, error) {
	return nil, errNotYet
}
func (l *Log) FirstOffset() uint64                        { return 1 }
func (l *Log) NextOffset() uint64                         { return 1 }
func (l *Log) LastTimestamp() int64                       { return 0 }
func (l *Log) OffsetAtOrAfterTime(tsMicros int64) uint64  { return 1 }
func (l *Log) LastOffsetAtOrBefore(tsMicros int64) uint64 { return 0 }
func (l *Log) FindTransaction(txid string) (uint64, [16]byte, bool, error) {
	return 0, [16]byte{}, false, errNotYet
}
func (l *Log) DeleteFilesBefore(offset uint64) (int, int64, error) { return 0, 0, errNotYet }
func (l *Log) Close() error                                        { return nil }
func (l *Log) Dir() string                                         { return l.dir }

// Committer runs group commit across many Logs.
type Committer struct{}

func NewCommitter(p SyncPolicy, interval time.Duration) *Committer { return &Committer{} }
func (c *Committer) Commit(l *Log) error                           { return errNotYet }
func (c *Committer) Close() error                                  { return nil }
func (c *Committer) SyncLatencies() []int64                        { return nil }
