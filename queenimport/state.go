package queenimport

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/uuid"
)

// State is what `comb import --state FILE` keeps between runs: per partition, the (created_at,
// id) of the last message whose page is durable in comb, so a run after a crash or a kill
// reads on from there instead of from the start. It is an optimisation only: the data
// directory is written first and the state after, so it never runs ahead of what comb holds,
// and without it a run re-reads everything and skips what is stored (dedup by transactionId).
//
// File shape (JSON): {"version":1,"dataDir":ABS,"partitions":{PARTITION-ID:{"createdAt":RFC3339Nano,"id":UUID}}}.
type State struct {
	Version    int                       `json:"version"`
	DataDir    string                    `json:"dataDir"`
	Partitions map[string]PartitionState `json:"partitions"`

	path string
}

// PartitionState is where one partition's copy stands.
type PartitionState struct {
	CreatedAt time.Time `json:"createdAt"`
	ID        uuid.UUID `json:"id"`
}

// LoadState reads path, or starts an empty state when the file does not exist. Errors: an
// unreadable or malformed file, or one written for another data directory (its positions
// would skip messages that directory does not hold).
func LoadState(path, dataDir string) (*State, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	s := &State{Version: 1, DataDir: abs, Partitions: map[string]PartitionState{}, path: path}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("queenimport: state %s: %w", path, err)
	}
	var got State
	if err := json.Unmarshal(b, &got); err != nil || got.Version != 1 {
		return nil, fmt.Errorf("queenimport: state %s: not a version 1 import state (%v)", path, err)
	}
	if got.DataDir != abs {
		return nil, fmt.Errorf("queenimport: state %s is for data directory %s, not %s", path, got.DataDir, abs)
	}
	if got.Partitions != nil {
		s.Partitions = got.Partitions
	}
	return s, nil
}

// memoryState is a state kept in memory only (a live move's, held by its Follower): Save
// does nothing.
func memoryState() *State {
	return &State{Version: 1, Partitions: map[string]PartitionState{}}
}

// Save writes the state to its file (nothing for a state in memory): a temporary file, fsynced, renamed over it, and the
// directory fsynced, so a crash leaves the old state or the new one, never a torn file.
func (s *State) Save() error {
	if s.path == "" {
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("queenimport: state: %w", err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err == nil {
		var d *os.File
		if d, err = os.Open(filepath.Dir(s.path)); err == nil {
			err = d.Sync()
			d.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("queenimport: state: %w", err)
	}
	return nil
}
