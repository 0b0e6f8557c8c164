package fsck

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/meta"
	"github.com/combmq/comb/vfs"
)

// checkDescriptors reads the DESCRIPTOR of every log directory the metadata
// names, with meta.ReadDescriptor (the reader the server's start-up and
// meta.Rebuild use). The server starts without it, but it is what rebuilds
// the journal if that is ever lost: a missing (once the metadata says every
// directory has one) or damaged descriptor is repairable, --repair writes it
// again from the metadata as the server does for one a crash lost; one that
// describes another directory needs a person (the directory was copied or
// renamed). Directories the metadata does not name are checkOrphans'.
func (c *checker) checkDescriptors() {
	if c.meta == nil || c.meta.State == nil {
		return
	}
	ms := c.meta.State
	for _, d := range c.logs {
		want, ok := wantDescriptor(ms, d)
		if !ok {
			continue
		}
		rel := filepath.Join(d.Rel, meta.DescriptorFile)
		got, err := meta.ReadDescriptor(vfs.OS, d.Path)
		if err == nil {
			err = got.CheckDir(d.DLQ, d.ID)
		}
		queue, partition := c.names(d)
		f := Finding{Kind: KindDescriptorDamaged, Severity: SeverityRepairable, File: rel, PartitionID: datadir.IDString(d.ID), Queue: queue, Partition: partition}
		switch {
		case err == nil:
			continue
		case errors.Is(err, fs.ErrNotExist) && !ms.Described:
			continue // a directory made before descriptors: the server writes it at start
		case errors.Is(err, fs.ErrNotExist):
			f.Detail = "missing (written without a sync, and lost in a crash): the server starts without it, but a rebuild of meta/journal could not name this directory"
		case errors.Is(err, meta.ErrDescriptorMismatch):
			f.Severity = SeverityDamaged
			f.Detail = fmt.Sprintf("%v: the directory was copied or renamed; a rebuild of meta/journal would put its messages under the wrong queue", err)
			c.rep.add(f)
			continue
		default:
			if st, serr := os.Stat(filepath.Join(d.Path, meta.DescriptorFile)); serr == nil {
				f.EndByte = st.Size() // one frame: the damage is the file
			}
			// The reader's error names the file; the finding does already.
			why := strings.ReplaceAll(err.Error(), filepath.Join(d.Path, meta.DescriptorFile)+": ", "")
			f.Detail = fmt.Sprintf("does not decode (%s): the server starts without it, but a rebuild of meta/journal could not name this directory", why)
		}
		f.Repair = "write " + rel + " again from the metadata (file and directory synced)"
		path := d.Path
		c.plan(f, repairPlan{run: func() error { return meta.WriteDescriptor(vfs.OS, path, want, false) }})
	}
}

// wantDescriptor is the descriptor the metadata gives log directory d
// (false: the metadata does not name it).
func wantDescriptor(st *meta.State, d datadir.LogDir) (meta.Descriptor, bool) {
	if d.DLQ {
		q := st.QueueByID[d.ID]
		if q == nil {
			return meta.Descriptor{}, false
		}
		return meta.Descriptor{Kind: meta.DescribesDLQ, QueueID: q.ID, QueueCreatedAt: q.CreatedAt, Queue: q.Name,
			Namespace: q.Namespace, Task: q.Task}, true
	}
	p := st.PartByID[d.ID]
	if p == nil {
		return meta.Descriptor{}, false
	}
	q := st.QueueByID[p.QueueID]
	if q == nil {
		return meta.Descriptor{}, false
	}
	return meta.Descriptor{Kind: meta.DescribesPartition, QueueID: q.ID, QueueCreatedAt: q.CreatedAt, Queue: q.Name,
		Namespace: q.Namespace, Task: q.Task, PartitionID: p.ID, PartitionCreated: p.CreatedAt, Partition: p.Name}, true
}
