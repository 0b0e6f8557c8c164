package dump

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/datadir/datadirtest"
)

// TestDumpShape: one JSON object per line, a partition line first, then segments and
// records in offset order with the fields jq users select on (issue 5 "comb dump").
func TestDumpShape(t *testing.T) {
	d := datadirtest.NewBrokerDir(t, "orders", 2, 30, 10)
	var out bytes.Buffer
	st, err := Run(d.Root, Options{Queue: "orders", Partition: "p1", Payload: true}, &out)
	require.NoError(t, err)
	assert.Equal(t, Stats{Partitions: 1, Segments: 3, Records: 30}, st)

	lines := datadirtest.DecodeLines(t, out.Bytes())
	require.Len(t, lines, 1+3+30)
	assert.Equal(t, "partition", lines[0]["type"])
	assert.Equal(t, "orders", lines[0]["queue"])
	assert.Equal(t, "p1", lines[0]["partition"])
	assert.EqualValues(t, 1, lines[0]["firstOffset"])
	assert.EqualValues(t, 31, lines[0]["nextOffset"])

	segs := datadirtest.ByType(lines, "segment")
	require.Len(t, segs, 3)
	for i, s := range segs {
		assert.EqualValues(t, 1+10*i, s["firstOffset"])
		assert.EqualValues(t, 10+10*i, s["lastOffset"])
		assert.EqualValues(t, 10, s["count"])
		assert.Equal(t, time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC).Add(time.Duration(i)*time.Millisecond).Format("2006-01-02T15:04:05.000000Z"), s["createdAt"])
	}
	recs := datadirtest.ByType(lines, "record")
	require.Len(t, recs, 30)
	for i, r := range recs {
		tx := d.Pushed["p1"][i]
		assert.EqualValues(t, i+1, r["offset"], "records in offset order")
		assert.Equal(t, tx, r["transactionId"])
		assert.Equal(t, "orders", r["queue"])
		assert.Equal(t, "p1", r["partition"])
		assert.Nil(t, r["traceId"])
		want := map[string]any{}
		require.NoError(t, json.Unmarshal([]byte(d.Payloads[tx]), &want))
		assert.Equal(t, want, r["payload"], "payload is the pushed JSON value, not a string")
		assert.EqualValues(t, len(d.Payloads[tx]), r["payloadBytes"])
		assert.Len(t, r["id"], 36)
	}
}

// TestDumpFilters: offset and time ranges select whole segments and records; without
// --payload no payload field is printed; --what index prints one line per segment.
func TestDumpFilters(t *testing.T) {
	d := datadirtest.NewBrokerDir(t, "orders", 1, 50, 10) // segments at 09:00:00.000, .001, ... .004
	base := time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC).UnixMicro()
	cases := []struct {
		name    string
		opts    Options
		offsets [2]int // first and last record offset printed
		n       int
	}{
		{"offset range", Options{Records: true, FromOffset: 15, ToOffset: 27}, [2]int{15, 27}, 13},
		{"from offset only", Options{Records: true, FromOffset: 41}, [2]int{41, 50}, 10},
		{"time range is inclusive and selects segments", Options{Records: true, FromMicros: base + 1000, ToMicros: base + 2000}, [2]int{11, 30}, 20},
		{"time and offset together", Options{Records: true, FromMicros: base + 1000, ToOffset: 12}, [2]int{11, 12}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := Run(d.Root, tc.opts, &out)
			require.NoError(t, err)
			recs := datadirtest.ByType(datadirtest.DecodeLines(t, out.Bytes()), "record")
			require.Len(t, recs, tc.n)
			assert.EqualValues(t, tc.offsets[0], recs[0]["offset"])
			assert.EqualValues(t, tc.offsets[1], recs[len(recs)-1]["offset"])
			_, hasPayload := recs[0]["payload"]
			assert.False(t, hasPayload, "no payload without --payload")
		})
	}
	t.Run("index entries", func(t *testing.T) {
		var out bytes.Buffer
		st, err := Run(d.Root, Options{Index: true}, &out)
		require.NoError(t, err)
		// Every file here is active with fewer than segment.LazyIndexSegments
		// segments: its index lives in the server's memory, no file to dump.
		assert.Equal(t, int64(0), st.IndexEntries)
		assert.Empty(t, datadirtest.ByType(datadirtest.DecodeLines(t, out.Bytes()), "index"))
	})
	t.Run("unknown partition", func(t *testing.T) {
		_, err := Run(d.Root, Options{Queue: "orders", Partition: "nope"}, &bytes.Buffer{})
		assert.ErrorIs(t, err, datadir.ErrNotFound)
	})
}

// A stream query registered (and then reset) after the last flush pass is only in the
// commit log: --stream-query prints it as the server's start-up would apply it, where it used
// to answer "no stream query".
func TestDumpStreamQueryFromTheCommitLog(t *testing.T) {
	m := datadirtest.NewMemBroker(t)
	m.Push("src", "p", 3, 3)
	first, err := m.B.StreamRegister(broker.StreamQueryRequest{Name: "wc", SourceQueue: "src", ConfigHash: "h1"})
	require.NoError(t, err)
	again, err := m.B.StreamRegister(broker.StreamQueryRequest{Name: "wc", SourceQueue: "src", ConfigHash: "h2", Reset: true})
	require.NoError(t, err)
	require.True(t, again.Reset)
	root := m.Killed()

	var out bytes.Buffer
	_, err = Run(root, Options{StreamQuery: "wc"}, &out)
	require.NoError(t, err)
	lines := datadirtest.DecodeLines(t, out.Bytes())
	require.Len(t, lines, 1)
	assert.Equal(t, first.QueryID, lines[0]["queryId"])
	assert.Equal(t, "h2", lines[0]["configHash"])
	assert.Equal(t, "src", lines[0]["sourceQueue"])
	assert.Greater(t, lines[0]["resetLsn"], float64(0))
	assert.Equal(t, float64(0), lines[0]["registryCovers"])

	_, err = Run(root, Options{StreamQuery: "nope"}, &out)
	assert.ErrorContains(t, err, `no stream query "nope"`)
}
