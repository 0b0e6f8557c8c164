package queenimport_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/queenimport"
	"github.com/combmq/comb/queenimport/pgtest"
)

// ReadMessages reads the next page while fn works on the one before: fn still gets every
// message once, in Queen's order, page by page, and an fn error stops the reading and comes
// back as it is, with the connection usable again (the reader has let it go).
func TestReadMessagesPagesInOrderAndStopsOnFnError(t *testing.T) {
	pg := pgtest.Start(t)
	pg.Configure("rd", map[string]any{})
	n := 2*queenimport.PageSize + 17
	for from := 0; from < n; from += 1000 {
		pg.Push(items("rd", "p", "m", from, min(1000, n-from)))
	}
	conn := connect(t, pg.URL)
	ctx := context.Background()
	snap, err := queenimport.ReadSnapshot(ctx, conn)
	require.NoError(t, err)
	var p queenimport.Partition
	for _, sp := range snap.Partitions {
		if sp.Name == "p" {
			p = sp
		}
	}
	require.Equal(t, "p", p.Name)

	var sizes []int
	var last struct {
		at time.Time
		id [16]byte
	}
	seen := map[string]bool{}
	require.NoError(t, queenimport.ReadMessages(ctx, conn, p, time.Time{}, [16]byte{}, func(page []queenimport.Message) error {
		sizes = append(sizes, len(page))
		for _, m := range page {
			after := m.CreatedAt.After(last.at) || m.CreatedAt.Equal(last.at) && string(m.ID[:]) > string(last.id[:])
			require.True(t, last.at.IsZero() || after, "message %s is out of (created_at, id) order", m.TransactionID)
			last.at, last.id = m.CreatedAt, m.ID
			require.False(t, seen[m.TransactionID], "message %s twice", m.TransactionID)
			seen[m.TransactionID] = true
		}
		return nil
	}))
	assert.Equal(t, []int{queenimport.PageSize, queenimport.PageSize, 17}, sizes)
	assert.Len(t, seen, n)

	stop := errors.New("stop here")
	calls := 0
	err = queenimport.ReadMessages(ctx, conn, p, time.Time{}, [16]byte{}, func([]queenimport.Message) error {
		calls++
		return stop
	})
	assert.Same(t, stop, err)
	assert.Equal(t, 1, calls)
	var one int
	require.NoError(t, conn.QueryRow(ctx, "SELECT 1").Scan(&one), "the connection is the caller's again")
	assert.Equal(t, 1, one)
}
