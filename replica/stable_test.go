package replica

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// memStable is a StableStore in memory whose Set can be held mid-write (hold).
type memStable struct {
	mu   sync.Mutex
	kv   map[string]uint64
	hold chan struct{} // non-nil: SetUint64 signals entered, then waits for it to close
	in   chan struct{}
}

func (m *memStable) Set(k, v []byte) error      { return m.SetUint64(k, uint64(len(v))) }
func (m *memStable) Get([]byte) ([]byte, error) { return nil, nil }

func (m *memStable) SetUint64(k []byte, v uint64) error {
	if m.hold != nil {
		m.in <- struct{}{}
		<-m.hold
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.kv[string(k)] = v
	return nil
}

func (m *memStable) GetUint64(k []byte) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.kv[string(k)], nil
}

// hashicorp/raft issue 717: a heartbeat's term saved after Shutdown must not reach the closed
// store (raft panics on the error); a write already under way finishes before close returns.
func TestStableStoreDropsWritesOnceClosed(t *testing.T) {
	under := &memStable{kv: map[string]uint64{}}
	s := &stableStore{StableStore: under}
	require.NoError(t, s.SetUint64([]byte("CurrentTerm"), 3))
	s.close()
	require.NoError(t, s.SetUint64([]byte("CurrentTerm"), 4), "no error for raft to panic on")
	require.NoError(t, s.Set([]byte("LastVoteCand"), []byte("n2")))
	got, err := s.GetUint64([]byte("CurrentTerm"))
	require.NoError(t, err)
	require.Equal(t, uint64(3), got, "the write after close never reached the store")
	require.Equal(t, map[string]uint64{"CurrentTerm": 3}, under.kv)

	// A write in progress holds close back until it is done.
	under = &memStable{kv: map[string]uint64{}, hold: make(chan struct{}), in: make(chan struct{})}
	s = &stableStore{StableStore: under}
	wrote := make(chan error)
	go func() { wrote <- s.SetUint64([]byte("CurrentTerm"), 5) }()
	<-under.in
	closed := make(chan struct{})
	go func() { s.close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("close returned while a write was under way")
	default:
	}
	close(under.hold)
	require.NoError(t, <-wrote)
	<-closed
	require.Equal(t, map[string]uint64{"CurrentTerm": 5}, under.kv)
}
