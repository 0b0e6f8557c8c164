package broker

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// A queue created and deleted between two flush passes left its directories
// in the pass's list; syncing their (removed) descriptors failed that pass
// and, since a failed list is kept for the next, every later one: the commit
// log was never truncated again and Close failed. Found by issue 13's notes
// tests, which delete a queue right after pushing to it.
func TestFlushPassAfterAQueueDeletedBeforeIt(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(Config{DataDir: dir, Sync: "always", Logger: zerolog.Nop()})
	require.NoError(t, err)
	_, err = b.Push([]PushItem{{Queue: "q", Partition: "p", TransactionID: "a", Payload: []byte("1")}})
	require.NoError(t, err)
	existed, err := b.DeleteQueue("q")
	require.NoError(t, err)
	require.True(t, existed)
	require.NoError(t, b.flushPass())
	require.NoError(t, b.flushPass(), "nothing left over for the next pass")
	require.NoError(t, b.Close())
}
