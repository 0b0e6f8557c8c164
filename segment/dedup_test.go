package segment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/index"
	"github.com/combmq/comb/vfs"
)

func TestFindTransaction(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{Codec: CodecS2})
	_, err := l.Append(1, recs(0, 50, 100)) // tx-0 .. tx-49 at offsets 1..50
	require.NoError(t, err)
	// first lookup loads the index from the segments
	off, id, ok, err := l.FindTransaction("tx-7")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(8), off)
	assert.Equal(t, rec(7, 0).ID, id)
	// appended after the load: kept current by Append
	_, err = l.Append(2, recs(50, 50, 100))
	require.NoError(t, err)
	off, _, ok, err = l.FindTransaction("tx-77")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(78), off)
	_, _, ok, err = l.FindTransaction("tx-100")
	require.NoError(t, err)
	assert.False(t, ok, "never written")
	require.NoError(t, l.Close())

	// across reopen: from dedup.idx, plus segments appended while not loaded
	l, _ = openMem(t, fs, Options{})
	_, err = l.Append(3, []Record{{TransactionID: "late", Payload: []byte("1")}})
	require.NoError(t, err)
	for _, c := range []struct {
		txid string
		off  uint64
		ok   bool
	}{{"tx-0", 1, true}, {"tx-99", 100, true}, {"late", 101, true}, {"nope", 0, false}, {"", 0, false}} {
		off, _, ok, err := l.FindTransaction(c.txid)
		require.NoError(t, err)
		assert.Equal(t, c.ok, ok, c.txid)
		assert.Equal(t, c.off, off, c.txid)
	}
	require.NoError(t, l.Close())
	b := fs.Bytes("/p/" + dedupFileName)
	assert.Len(t, b, index.DedupHeaderSize+101*index.DedupEntrySize, "one entry per transaction id")
}

func TestFindTransactionVerifiesHashMatches(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	_, err := l.Append(1, recs(0, 3, 10))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	// A dedup file that claims "ghost" lives at offset 2 (a forged collision).
	fs.SetBytes("/p/"+dedupFileName, dedupBytes([2]uint64{index.HashTxn("ghost"), 2}))
	l, _ = openMem(t, fs, Options{})
	_, _, ok, err := l.FindTransaction("ghost")
	require.NoError(t, err)
	assert.False(t, ok, "offset 2 holds tx-1, not ghost")
	off, _, ok, err := l.FindTransaction("tx-2")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, uint64(3), off)
}

func TestDedupDropsEntriesACrashTookBack(t *testing.T) {
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	_, err := l.Append(1, recs(0, 2, 10)) // tx-0, tx-1 at 1, 2
	require.NoError(t, err)
	require.NoError(t, l.Sync())
	_, _, _, err = l.FindTransaction("x") // load
	require.NoError(t, err)
	_, err = l.Append(2, []Record{{TransactionID: "lost", Payload: []byte("1")}}) // offset 3, never synced
	require.NoError(t, err)
	require.NoError(t, l.dedup.Drop()) // the dedup entry reached the disk, the segment did not
	crashed := fs.Crash(true)
	crashed.SetBytes("/p/"+dedupFileName, fs.Bytes("/p/"+dedupFileName))
	l, _ = openMem(t, crashed, Options{})
	assert.Equal(t, uint64(3), l.NextOffset())
	_, err = l.Append(3, []Record{{TransactionID: "new", Payload: []byte("1")}}) // reuses offset 3
	require.NoError(t, err)
	_, _, ok, err := l.FindTransaction("lost")
	require.NoError(t, err)
	assert.False(t, ok)
	off, _, ok, err := l.FindTransaction("new")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, uint64(3), off)
}

// A log under dedupFileMinRecords keeps its dedup table in memory only: no
// dedup.idx (one inode less for every partition that got one push), and a
// load after a release finds its ids again from the segments. The first
// flush that finds the log at the threshold (here a release's; Close's
// alike) creates the file with every entry since the load.
func TestSmallLogKeepsNoDedupFile(t *testing.T) {
	withDedupFileMin(t, 10)
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	_, err := l.Append(1, recs(0, 6, 40))
	require.NoError(t, err)
	_, _, ok, err := l.FindTransaction("tx-3")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Nil(t, fs.Bytes("/p/"+dedupFileName), "no dedup.idx under the threshold")

	require.True(t, l.Release())
	assert.Nil(t, fs.Bytes("/p/"+dedupFileName), "nor after a release under it")
	off, _, ok, err := l.FindTransaction("tx-5")
	require.NoError(t, err)
	require.True(t, ok, "found again from the segments after a release")
	assert.Equal(t, uint64(6), off)

	_, err = l.Append(2, recs(6, 4, 40)) // 10 records: at the threshold
	require.NoError(t, err)
	require.True(t, l.Release())
	b := fs.Bytes("/p/" + dedupFileName)
	require.NotNil(t, b, "the release's flush at the threshold made dedup.idx")
	n := 0
	_, err = index.ScanDedup(b, func(int, uint64, uint64) { n++ })
	require.NoError(t, err)
	assert.Equal(t, 10, n, "every record's entry: 6 indexed by the load, 4 appended")

	_, _, ok, err = l.FindTransaction("tx-9")
	require.NoError(t, err)
	require.True(t, ok, "the next load reads the file")
	require.NoError(t, l.Close())
}

// Close makes the file of a log that reached the threshold while loaded
// (the acceptance check of issue 10 looks for dedup.idx after 300 pushes).
func TestCloseMakesTheDeferredDedupFile(t *testing.T) {
	withDedupFileMin(t, 10)
	fs := vfs.NewMem()
	l, _ := openMem(t, fs, Options{})
	_, err := l.Append(1, recs(0, 4, 40))
	require.NoError(t, err)
	_, _, _, err = l.FindTransaction("none") // loads the 4-record log: no file
	require.NoError(t, err)
	for i := 1; i < 3; i++ {
		_, err = l.Append(int64(i+1), recs(4*i, 4, 40))
		require.NoError(t, err)
	}
	assert.Nil(t, fs.Bytes("/p/"+dedupFileName))
	require.NoError(t, l.Close())
	b := fs.Bytes("/p/" + dedupFileName)
	require.NotNil(t, b)
	n := 0
	_, err = index.ScanDedup(b, func(int, uint64, uint64) { n++ })
	require.NoError(t, err)
	assert.Equal(t, 12, n)
	l2, _ := openMem(t, fs, Options{})
	off, _, ok, err := l2.FindTransaction("tx-11")
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(12), off)
	require.NoError(t, l2.Close())
}
