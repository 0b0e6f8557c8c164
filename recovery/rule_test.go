package recovery

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRule(t *testing.T) {
	yes := func() bool { return true }
	no := func() bool { return false }
	cases := []struct {
		name string
		f    Facts
		want Plan
	}{
		{"no facts: a log from before the commit log is verified as it is", Facts{}, Plan{Mode: Verify}},
		{"no facts, stamp callback set: still verified", Facts{Unchanged: yes}, Plan{Mode: Verify}},
		{"clean shutdown, files untouched: opened from the summary", Facts{SyncedNext: 41, Unchanged: yes}, Plan{Mode: Summary, Keep: 41}},
		{"clean shutdown, files changed since: the synced offsets must all be there", Facts{SyncedNext: 41, Unchanged: no}, Plan{Mode: Below, Keep: 41, Quarantine: true}},
		{"summary read by fsck (no stamp check): below the synced length", Facts{SyncedNext: 41}, Plan{Mode: Below, Keep: 41, Quarantine: true}},
		{"summary behind the commit log's first base: the base", Facts{SyncedNext: 10, ReplayBase: 30, Unchanged: yes}, Plan{Mode: Below, Keep: 30}},
		{"commit log's base behind the summary: the summary", Facts{SyncedNext: 30, ReplayBase: 10}, Plan{Mode: Below, Keep: 30}},
		{"only a commit-log base", Facts{ReplayBase: 7}, Plan{Mode: Below, Keep: 7}},
		{"created by a retained entry, nothing synced: keep nothing", Facts{Created: true}, Plan{Mode: Below, Keep: 1, Quarantine: true}},
		{"replicated, summary: the summary, whatever the commit log", Facts{Replicated: true, SyncedNext: 12, ReplayBase: 40}, Plan{Mode: Below, Keep: 12}},
		{"replicated, no summary: keep nothing", Facts{Replicated: true, ReplayBase: 40}, Plan{Mode: Below, Keep: 1}},
		{"replicated, untouched and no base: from the summary", Facts{Replicated: true, SyncedNext: 12, Unchanged: yes}, Plan{Mode: Summary, Keep: 12}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Rule(tc.f))
		})
	}
}

// TestRuleAsksTheStampOnlyWhenItMatters: the stamp costs two stats per log
// at start-up; it is asked only for a log with a summary and no commit-log
// segment.
func TestRuleAsksTheStampOnlyWhenItMatters(t *testing.T) {
	for _, f := range []Facts{{}, {ReplayBase: 3}, {SyncedNext: 5, ReplayBase: 3}, {Created: true}} {
		calls := 0
		f.Unchanged = func() bool { calls++; return true }
		Rule(f)
		assert.Equal(t, 0, calls, "%+v", f)
	}
	calls := 0
	Rule(Facts{SyncedNext: 5, Unchanged: func() bool { calls++; return false }})
	assert.Equal(t, 1, calls)
}

// A DLQ log no summary and no commit-log segment names is kept from nothing,
// but only when a summaries file decoded; a partition in the same place is
// opened as it is (it is not known to be unsynced), as is a DLQ log when no
// summaries file decodes.
func TestStartDLQNeverSynced(t *testing.T) {
	id, other := [16]byte{1}, [16]byte{2}
	s := Start{SyncedNext: map[[16]byte]uint64{other: 7}, ReplayBase: map[[16]byte]uint64{}}
	assert.Equal(t, Plan{Mode: Below, Keep: 1, Quarantine: true}, s.Plan(id, DLQ, nil))
	assert.Equal(t, Plan{Mode: Verify}, s.Plan(id, Partition, nil))
	assert.Equal(t, Plan{Mode: Below, Keep: 7, Quarantine: true}, s.Plan(other, DLQ, nil))

	s.ReplayBase[id] = 4
	assert.Equal(t, Plan{Mode: Below, Keep: 4}, s.Plan(id, DLQ, nil), "the commit log holds its segments from 4 on")

	none := Start{}
	assert.Equal(t, Plan{Mode: Verify}, none.Plan(id, DLQ, nil))
}

// Plan hands unchanged to Rule: an unchanged log with a summary and nothing
// in the commit log opens from the summary alone.
func TestStartPlanUnchanged(t *testing.T) {
	id := [16]byte{1}
	s := Start{SyncedNext: map[[16]byte]uint64{id: 9}}
	assert.Equal(t, Plan{Mode: Summary, Keep: 9}, s.Plan(id, Partition, func() bool { return true }))
	assert.Equal(t, Plan{Mode: Below, Keep: 9, Quarantine: true}, s.Plan(id, Partition, func() bool { return false }))
}
