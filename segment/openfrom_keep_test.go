package segment

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenFromKeepUnsynced (issue 21 item 4): with Options.KeepUnsynced (no
// commit-log entry holds what lies at or after keepBelow, e.g. after a clean
// shutdown) OpenFrom copies the non-zero bytes it cuts, and the files it
// removes whole, to the quarantine directory before it changes anything, as a
// torn-tail cut does; zeros are not copied.
func TestOpenFromKeepUnsynced(t *testing.T) {
	garbage := bytes.Repeat([]byte("garbage!"), 20)
	tf := newTwoFiles(t, Options{})
	tf.mem.SetBytes(file10, cat(tf.segs[3], garbage))
	tf.mem.SetBytes("/p/"+segName(20), tf.segs[4])
	opts := Options{MaxFileBytes: 900, KeepUnsynced: true, QuarantineDir: "/q"}
	l, rep, err := openLogFrom(tf.mem, "/p", opts, 13)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	cutAt := len(tf.segs[3])
	want := []string{"/q/p/" + segName(20) + ".from-0", fmt.Sprintf("/q/p/%s.from-%d", segName(10), cutAt)}
	assert.Equal(t, want, rep.Unsynced.Kept)
	assert.Equal(t, tf.segs[4], tf.mem.Bytes(want[0]), "the removed file, whole")
	assert.Equal(t, garbage, tf.mem.Bytes(want[1]), "the cut bytes")
	assert.Equal(t, tf.segs[3], tf.mem.Bytes(file10), "cut after the segment ending at 12")
	assert.Contains(t, rep.Unsynced.String(), "no commit-log entry holds them: never acknowledged")

	// Zeros are what an extension a crash cut short leaves: nothing to keep.
	tf = newTwoFiles(t, Options{})
	tf.mem.SetBytes(file10, cat(tf.segs[3], make([]byte, 64)))
	l, rep, err = openLogFrom(tf.mem, "/p", opts, 13)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	assert.Empty(t, rep.Unsynced.Kept)
	assert.Equal(t, int64(64), rep.Unsynced.Bytes)

	// Without it nothing is copied: the commit log replays those bytes.
	tf = newTwoFiles(t, Options{})
	tf.mem.SetBytes(file10, cat(tf.segs[3], garbage))
	opts.KeepUnsynced = false
	l, rep, err = openLogFrom(tf.mem, "/p", opts, 13)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	assert.Empty(t, rep.Unsynced.Kept)
	_, err = tf.mem.List("/q")
	assert.Error(t, err, "no quarantine directory made")
}
