package segment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/vfs"
)

type txMatch struct {
	off uint64
	id  [16]byte
}

func findAll(t *testing.T, l *Log, txids []string) map[int]txMatch {
	t.Helper()
	got := map[int]txMatch{}
	require.NoError(t, l.FindTransactions(txids, func(i int, off uint64, id [16]byte) {
		_, twice := got[i]
		require.False(t, twice, "item %d reported twice", i)
		got[i] = txMatch{off, id}
	}))
	return got
}

func TestFindTransactionsAnswersEachIdLikeFindTransaction(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{Codec: CodecS2})
	_, err := l.Append(1, recs(0, 40, 50)) // tx-0 .. tx-39 at offsets 1..40
	require.NoError(t, err)
	_, err = l.Append(2, recs(40, 40, 50)) // tx-40 .. tx-79 at 41..80
	require.NoError(t, err)
	again := rec(5, 10) // tx-5 stored a second time, at offset 81: the newest wins
	_, err = l.Append(3, []Record{again})
	require.NoError(t, err)

	txids := []string{"tx-79", "nope", "", "tx-5", "tx-0", "tx-41", "tx-79"}
	got := findAll(t, l, txids)
	assert.Equal(t, map[int]txMatch{
		0: {80, rec(79, 0).ID},
		3: {81, again.ID},
		4: {1, rec(0, 0).ID},
		5: {42, rec(41, 0).ID},
		6: {80, rec(79, 0).ID},
	}, got, "absent and empty ids are not reported; a repeated id is reported at each position")
	for i, tx := range txids {
		off, id, ok, err := l.FindTransaction(tx)
		require.NoError(t, err)
		m, found := got[i]
		assert.Equal(t, found, ok, tx)
		assert.Equal(t, m.off, off, tx)
		assert.Equal(t, m.id, id, tx)
	}
	require.NoError(t, l.Close())
}

func TestFindTransactionsVerifiesHashMatches(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	_, err := l.Append(1, recs(0, 3, 10))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	// A dedup file that claims "ghost" lives at offset 2 (a forged collision).
	fs.SetBytes("/p/"+dedupFileName, dedupBytes([2]uint64{index.HashTxn("ghost"), 2}))
	l, _ = openMem(t, fs, Options{})
	got := findAll(t, l, []string{"ghost", "tx-2"})
	assert.Equal(t, map[int]txMatch{1: {3, rec(2, 0).ID}}, got, "offset 2 holds tx-1, not ghost")
	require.NoError(t, l.Close())
}

func TestFindTransactionsOnAnEmptyLog(t *testing.T) {
	l, _ := openMem(t, vfs.NewMem(), Options{})
	assert.Empty(t, findAll(t, l, []string{"a", "b"}))
	require.NoError(t, l.Close())
	assert.ErrorIs(t, l.FindTransactions([]string{"a"}, func(int, uint64, [16]byte) {}), ErrClosed)
}

// BenchmarkFindTransactionsRetriedPush: a push of 100 items retried whole, every id a
// duplicate: one read verifies them all.
func BenchmarkFindTransactionsRetriedPush(b *testing.B) {
	l, _, err := Open(b.TempDir(), Options{Codec: CodecS2})
	require.NoError(b, err)
	defer l.Close()
	rs := recs(0, 100, 200)
	_, err = l.Append(1, rs)
	require.NoError(b, err)
	txids := make([]string, len(rs))
	for i := range rs {
		txids[i] = rs[i].TransactionID
	}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if err := l.FindTransactions(txids, func(int, uint64, [16]byte) { n++ }); err != nil || n != 100 {
			b.Fatal(err, n)
		}
	}
}
