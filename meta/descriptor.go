package meta

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/combmq/comb/record"
	"github.com/combmq/comb/vfs"
)

// DescriptorFile is the descriptor's name inside a partition or DLQ directory.
const DescriptorFile = "DESCRIPTOR"

const descriptorVersion = 1

var descriptorFormat = record.NewFormat("CMPD", 8<<10)

// DescriptorKind says what a directory holds.
type DescriptorKind byte

const (
	DescribesPartition DescriptorKind = 1
	DescribesDLQ       DescriptorKind = 2
)

// Descriptor says what a partition or DLQ directory is, so that the
// registry can be rebuilt from the data alone (doc.go). Labels are the
// queue's when the directory was made.
type Descriptor struct {
	Kind             DescriptorKind
	QueueID          [16]byte
	QueueCreatedAt   int64 // µs
	Queue            string
	Namespace, Task  string
	PartitionID      [16]byte // zero for a DLQ
	PartitionCreated int64    // µs
	Partition        string
}

func (d *Descriptor) encode() ([]byte, error) {
	for _, s := range []string{d.Queue, d.Namespace, d.Task, d.Partition} {
		if len(s) > MaxStringBytes {
			return nil, fmt.Errorf("%w: descriptor string of %d bytes", ErrRecordTooLarge, len(s))
		}
	}
	b := []byte{descriptorVersion, byte(d.Kind)}
	b = append(b, d.QueueID[:]...)
	b = binary.AppendVarint(b, d.QueueCreatedAt)
	b = record.AppendString(b, d.Queue)
	b = record.AppendString(b, d.Namespace)
	b = record.AppendString(b, d.Task)
	b = append(b, d.PartitionID[:]...)
	b = binary.AppendVarint(b, d.PartitionCreated)
	b = record.AppendString(b, d.Partition)
	return b, nil
}

func decodeDescriptor(body []byte) (Descriptor, error) {
	var d Descriptor
	r := &record.Fields{B: body, MaxString: MaxStringBytes}
	if v := r.Byte(); v != descriptorVersion && r.Err == nil {
		return d, fmt.Errorf("%w: descriptor version %d", ErrBody, v)
	}
	d.Kind = DescriptorKind(r.Byte())
	d.QueueID = r.ID()
	d.QueueCreatedAt = r.Varint()
	d.Queue = r.String()
	d.Namespace = r.String()
	d.Task = r.String()
	d.PartitionID = r.ID()
	d.PartitionCreated = r.Varint()
	d.Partition = r.String()
	if err := r.End(); err != nil {
		return d, fmt.Errorf("%w: %v", ErrBody, err)
	}
	if d.Kind != DescribesPartition && d.Kind != DescribesDLQ {
		return d, fmt.Errorf("%w: descriptor kind %d", ErrBody, d.Kind)
	}
	return d, nil
}

// WriteDescriptor writes d to dir/DESCRIPTOR (created or replaced; dir is
// new, or fsck rewrites a damaged one). Unless noSync it makes it durable:
// the file fdatasynced and dir synced before it returns, so a directory that
// later holds records always says what it is; syncing dir's own entry in its
// parent is the caller's (one fsync for many new directories). With noSync
// nothing is synced: the broker's create paths write it so, because the
// commit log holds the creation and the flush pass makes the descriptor
// durable later (SyncDescriptor) before the log is truncated behind it. A
// crash before it is durable leaves no file or a torn one in a directory
// with no durable records, which start-up removes.
//
// Errors: ErrRecordTooLarge, or the file system's, wrapped with the path.
func WriteDescriptor(fsys vfs.FS, dir string, d Descriptor, noSync bool) error {
	body, err := d.encode()
	if err != nil {
		return err
	}
	b, err := descriptorFormat.Append(nil, body)
	if err != nil {
		return fmt.Errorf("descriptor %s: %w", dir, err)
	}
	name := filepath.Join(dir, DescriptorFile)
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return fmt.Errorf("descriptor: %w", err)
	}
	_, err = f.Write(b)
	if err == nil && !noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && !noSync {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("descriptor %s: %w", name, err)
	}
	return nil
}

// ReadDescriptor reads dir/DESCRIPTOR.
//
// Errors: fs.ErrNotExist (wrapped) when there is none; record's errors or
// ErrBody for a damaged one.
func ReadDescriptor(fsys vfs.FS, dir string) (Descriptor, error) {
	if fsys == nil {
		fsys = vfs.OS
	}
	name := filepath.Join(dir, DescriptorFile)
	body, err := descriptorFormat.ReadFile(fsys, name)
	if err != nil {
		return Descriptor{}, err
	}
	d, err := decodeDescriptor(body)
	if err != nil {
		return d, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}

// ErrDescriptorMismatch is returned by CheckDir for a descriptor that
// describes another directory (a copied or renamed directory).
var ErrDescriptorMismatch = errors.New("meta: descriptor does not describe this directory")

// CheckDir verifies that d describes the directory named id under
// partitions/ (dlq false) or dlq/ (dlq true).
//
// Errors: ErrDescriptorMismatch (wrapped with what it describes instead).
func (d Descriptor) CheckDir(dlq bool, id [16]byte) error {
	switch {
	case dlq && (d.Kind != DescribesDLQ || d.QueueID != id):
		return fmt.Errorf("%w: it describes the DLQ of queue %s (kind %d)", ErrDescriptorMismatch, IDString(d.QueueID), d.Kind)
	case !dlq && (d.Kind != DescribesPartition || d.PartitionID != id):
		return fmt.Errorf("%w: it describes partition %s (kind %d)", ErrDescriptorMismatch, IDString(d.PartitionID), d.Kind)
	}
	return nil
}

// SyncDescriptor makes a descriptor written without syncs durable: the file
// fdatasynced, then its directory synced. Syncing the directory's own entry
// in its parent is the caller's.
//
// Errors: the file system's, wrapped with the path.
func SyncDescriptor(fsys vfs.FS, dir string) error {
	name := filepath.Join(dir, DescriptorFile)
	f, err := fsys.OpenFile(name, os.O_RDWR)
	if err != nil {
		return fmt.Errorf("descriptor: %w", err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("descriptor %s: %w", name, err)
	}
	return nil
}
