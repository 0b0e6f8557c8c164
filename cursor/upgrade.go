package cursor

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
)

// upgrade brings a directory holding format 1 or 2 files (journals and their
// snapshots) to format 3, in place and crash-safely:
//
//  1. the newest format's snapshot and journals are read with its decoder
//     (read only: a torn last checkpoint is skipped, not cut);
//  2. all of it is written as one format 3 snapshot with replayFrom 1 (the
//     commit log holds no checkpoint older than the upgrade), the redo
//     records those files held kept in it as legacy records (temporary
//     file, fsync, rename, fsync of the directory);
//  3. only then are the format 1 and 2 files removed, and the directory synced.
//
// A crash before 2 ends leaves the old files as they were (the next Open
// upgrades again); a crash after it leaves a format 3 snapshot beside old
// files, which the next Open removes as the leftovers of a finished upgrade.
// Damage in the old files is a *CorruptionError, and nothing is changed.
// The legacy records stay in every snapshot until ForgetLegacyRecords: the
// broker applies them (idempotently) at every Open that returns them.
func (e *Engine) upgrade(files dirFiles, rep *RecoveryReport) error {
	if len(files.snapshots) == 0 {
		rv := &legacyReader{replayer: replayer{e: e}, recs: make(map[uint64][]byte), nextID: 1}
		var last uint64
		var err error
		from := 2
		switch {
		case len(files.v2snapshots)+len(files.v2journals) == 0:
			from = 1
			last, err = e.readV1(files, rv)
		case len(files.v2snapshots) == 0 && len(files.v1journals)+len(files.v1snapshots) > 0:
			// Format 1 files are left beside format 2 ones only by a crash
			// after the format 2 upgrade's snapshot, which is missing here.
			err = &CorruptionError{File: e.dir, Reason: "format 1 files beside format 2 journals, but no format 2 snapshot: not a directory comb wrote"}
		default:
			last, err = e.readV2(files, rv)
		}
		if err != nil {
			return err
		}
		legacy := make([][]byte, 0, len(rv.recs))
		for _, id := range slices.Sorted(maps.Keys(rv.recs)) {
			legacy = append(legacy, rv.recs[id])
		}
		if _, err := e.writeSnapshot(legacy, func() (uint64, error) { return 1, nil }); err != nil {
			return fmt.Errorf("cursor engine %s: upgrade from format %d to %d: %w", e.dir, from, formatVersion, err)
		}
		rep.Upgraded, rep.UpgradedFrom, rep.LastSeq = true, from, last
	}
	for _, l := range [][]seqFile{files.v1journals, files.v1snapshots, files.v2journals, files.v2snapshots} {
		for _, f := range l {
			if err := e.fs.Remove(filepath.Join(e.dir, f.name)); err != nil {
				return fmt.Errorf("cursor engine %s: remove a format %d file after the upgrade: %w", e.dir, f.format, err)
			}
		}
	}
	if !e.opts.NoSync {
		if err := e.fs.SyncDir(e.dir); err != nil {
			return fmt.Errorf("cursor engine %s: upgrade: %w", e.dir, err)
		}
	}
	return nil
}

// legacyReader applies the entries of format 1 and 2 files to the engine's
// maps, as replayer does, and keeps their redo records by id.
type legacyReader struct {
	replayer
	recs   map[uint64][]byte
	nextID uint64 // format 1 records have no id: they take the next one
}

func (r *legacyReader) record(id uint64, rec []byte) {
	if id == 0 {
		id = r.nextID
	}
	r.recs[id] = bytes.Clone(rec)
	r.nextID = max(r.nextID, id+1)
}

func (r *legacyReader) dropRecord(id uint64) {
	delete(r.recs, id)
	r.nextID = max(r.nextID, id+1)
}

func (r *legacyReader) dropAllRecords() { clear(r.recs) }

// ForgetLegacyRecords drops the redo records a format 1 or 2 directory held
// (RecoveryReport.LegacyRecords) from the snapshots taken after it returns.
// Call it once their effects are durable (the pushes they re-append synced,
// the states they re-apply through a Wait): until then every snapshot keeps
// them, and every Open hands them out again.
func (e *Engine) ForgetLegacyRecords() {
	e.legacyMu.Lock()
	e.legacy = nil
	e.legacyMu.Unlock()
}
