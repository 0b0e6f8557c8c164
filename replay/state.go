package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/combmq/comb/vfs"
)

// replayState is the resume file of a replay:
//
//	{"target": "http://...", "source": "/path", "partitions": {"<queue>\u0000<partition>": lastOffset}}
//
// written to "<file>.tmp", fsynced and renamed over the file (then the directory
// fsynced), at most once a second and when the replay ends, so a crash of the
// replay itself leaves the previous complete state. An offset in it means the
// target answered 201 for every record up to it; records after it are re-sent,
// and the target's dedup makes the few re-sent twice harmless.
type replayState struct {
	path string

	mu         sync.Mutex
	Target     string            `json:"target"`
	Source     string            `json:"source"`
	Partitions map[string]uint64 `json:"partitions"`
	dirty      bool
	savedAt    time.Time
}

func stateKey(queue, partition string) string { return queue + "\x00" + partition }

// loadReplayState reads path (a missing file is a fresh start). A state written for
// another target or source is refused rather than silently applied.
func loadReplayState(path, target, source string) (*replayState, error) {
	st := &replayState{path: path, Target: target, Source: source, Partitions: map[string]uint64{}}
	if path == "" {
		return st, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	old, err := decodeReplayState(b)
	if err != nil {
		return nil, fmt.Errorf("resume state %s: %w", path, err)
	}
	if old.Target != target || old.Source != source {
		return nil, fmt.Errorf("resume state %s belongs to a replay of %s to %s, not %s to %s (remove it to start over)", path, old.Source, old.Target, source, target)
	}
	if old.Partitions != nil {
		st.Partitions = old.Partitions
	}
	return st, nil
}

func (s *replayState) done(key string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Partitions[key]
}

// advance records that the target accepted everything of key up to offset, and
// saves the file if the last save is a second old.
func (s *replayState) advance(key string, offset uint64) {
	s.mu.Lock()
	if offset > s.Partitions[key] {
		s.Partitions[key] = offset
		s.dirty = true
	}
	due := s.path != "" && s.dirty && time.Since(s.savedAt) >= time.Second
	s.mu.Unlock()
	if due {
		_ = s.save()
	}
}

// save writes the state durably (see the type comment).
func (s *replayState) save() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.path == "" || !s.dirty {
		return nil
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.path); err != nil {
		return err
	}
	s.dirty, s.savedAt = false, time.Now()
	return vfs.OS.SyncDir(filepath.Dir(s.path))
}

// decodeReplayState decodes a resume-state file's bytes; it never panics.
func decodeReplayState(b []byte) (*replayState, error) {
	var st replayState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, err
	}
	return &st, nil
}
