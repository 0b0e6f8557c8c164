package broker

import (
	"strings"
	"testing"

	"github.com/combmq/comb/names"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// spec 0.4 / 11 #27: the name rules the broker enforces itself (the HTTP layer
// applies the same ones first).
func TestCheckNameRulesOfSpec04(t *testing.T) {
	cases := []struct {
		name    string
		what    names.Kind
		in, err string
	}{
		{"spec 0.4: a plain queue name", names.Queue, "orders.eu", ""},
		{"spec 0.4: '/' is refused in queue names", names.Queue, "a/b", "Queue name must not contain '/'"},
		{"spec 0.4: '/' is allowed in partition names", names.Partition, "eu/west/1", ""},
		{"spec 0.4: '/' is allowed in consumer group names", names.ConsumerGroup, "team/billing", ""},
		{"'../' in a partition name is just characters", names.Partition, "../x", ""},
		{"'..' alone is refused", names.Partition, "..", "Partition name must not be '.' or '..'"},
		{"spec 0.4: 255 characters of two bytes each", names.Queue, strings.Repeat("é", 255), ""},
		{"spec 0.4: 256 characters", names.Queue, strings.Repeat("é", 256), "Queue name must be at most 255 characters"},
		{"invalid UTF-8 is refused", names.Queue, "a\xffb", "Queue name must be valid UTF-8"},
		{"an encoded lone surrogate is refused", names.ConsumerGroup, "a\xed\xa0\x80", "Consumer group name must be valid UTF-8"},
		{"NUL is refused", names.Partition, "a\x00", "Partition name must not contain NUL"},
		{"empty is refused", names.Queue, "", "Queue name must not be empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := nameErr(c.what, c.in)
			if c.err == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrBadRequest)
			assert.EqualError(t, err, c.err)
		})
	}
}

// spec 0.4: a transactionId is 1..255 characters, not bytes.
func TestPushTransactionIDLimitCountsCharacters(t *testing.T) {
	e := newEnv(t)
	_, err := e.b.Push([]PushItem{{Queue: "q", TransactionID: strings.Repeat("ü", 255), Payload: []byte("1")}})
	assert.NoError(t, err)
	_, err = e.b.Push([]PushItem{{Queue: "q", TransactionID: strings.Repeat("ü", 256), Payload: []byte("1")}})
	assert.EqualError(t, err, "TransactionId must be at most 255 characters")
}

// Issue 10: namespace and task get the limits of names (spec 0.4); a refused configure writes
// nothing, so a 2 MiB namespace can no longer reach the metadata journal.
func TestConfigureRefusesBadLabelsAndWritesNothing(t *testing.T) {
	cases := []struct {
		name, namespace, task, err string
	}{
		{"a 2 MiB namespace", strings.Repeat("n", 2<<20), "", "namespace must be at most 255 characters"},
		{"a 100 kB task", "", strings.Repeat("t", 100000), "task must be at most 255 characters"},
		{"256 two-byte characters", strings.Repeat("é", 256), "", "namespace must be at most 255 characters"},
		{"invalid UTF-8", "a\xffb", "", "namespace must be valid UTF-8"},
		{"NUL", "", "a\x00", "task must not contain NUL"},
	}
	e := newEnv(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.b.Configure(ConfigureRequest{Queue: "labels", Namespace: c.namespace, Task: c.task, Options: DefaultQueueOptions()})
			assert.ErrorIs(t, err, ErrBadRequest)
			assert.EqualError(t, err, c.err)
		})
	}
	assert.Empty(t, e.b.View().Queues(), "no queue was created")
	res, err := e.b.Configure(ConfigureRequest{Queue: "labels", Namespace: strings.Repeat("é", 255), Task: "./x", Options: DefaultQueueOptions()})
	assert.NoError(t, err, "255 characters, '.' and '/' are fine")
	assert.Equal(t, strings.Repeat("é", 255), res.Namespace)
	e.reopen()
	qs := e.b.View().Queues()
	if assert.Len(t, qs, 1) {
		assert.Equal(t, strings.Repeat("é", 255), qs[0].Conf().Namespace)
		assert.Equal(t, "./x", qs[0].Conf().Task)
	}
}

// appendUUID writes what uuidString returns (the pop's message ids use it).
func TestAppendUUIDMatchesUUIDString(t *testing.T) {
	ids := [][16]byte{{}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	for range 100 {
		ids = append(ids, newV7())
	}
	for _, id := range ids {
		assert.Equal(t, uuidString(id), string(appendUUID([]byte("x"), id))[1:])
	}
}

// idTexts writes the canonical form uuidString gives, and earlier strings survive later ones.
func TestIDTextsMatchUUIDString(t *testing.T) {
	texts := newIDTexts(2)
	var got, want []string
	for i := range 5 { // past the two it was sized for
		var id [16]byte
		for j := range id {
			id[j] = byte(i*31 + j*17)
		}
		got = append(got, texts.str(id))
		want = append(want, uuidString(id))
	}
	require.Equal(t, want, got)
}
