package names

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckRefusesWithTheKindAndProblem(t *testing.T) {
	cases := []struct {
		kind Kind
		name string
		want string
	}{
		{Queue, "", "Queue name must not be empty"},
		{Queue, "a\xffb", "Queue name must be valid UTF-8"},
		{Queue, strings.Repeat("q", 256), "Queue name must be at most 255 characters"},
		{Queue, "a/b", "Queue name must not contain '/'"},
		{Partition, "a\x00b", "Partition name must not contain NUL"},
		{ConsumerGroup, "..", "Consumer group name must not be '.' or '..'"},
	}
	for _, c := range cases {
		err := Check(c.kind, c.name)
		if assert.Error(t, err, c.name) {
			assert.Equal(t, c.want, err.Error())
		}
	}
}

func TestCheckAccepts(t *testing.T) {
	assert.NoError(t, Check(Queue, strings.Repeat("é", 255)), "255 characters of 2 bytes each")
	assert.NoError(t, Check(Partition, "a/b"), "'/' is a queue-name rule only")
	assert.NoError(t, Check(ConsumerGroup, "billing.v2"))
}

func TestCheckLabel(t *testing.T) {
	assert.NoError(t, CheckLabel(Namespace, ""), "unset")
	assert.NoError(t, CheckLabel(Task, ".."), "labels are only compared")
	assert.EqualError(t, CheckLabel(Namespace, strings.Repeat("n", 256)), "namespace must be at most 255 characters")
	assert.EqualError(t, CheckLabel(Task, "a\x00"), "task must not contain NUL")
	assert.EqualError(t, CheckLabel(Task, "\xc3"), "task must be valid UTF-8")
}

func TestCheckTransactionID(t *testing.T) {
	assert.NoError(t, CheckTransactionID(""))
	assert.EqualError(t, CheckTransactionID(strings.Repeat("t", 256)), "TransactionId must be at most 255 characters")
	assert.EqualError(t, CheckTransactionID("t\x00"), "TransactionId must not contain NUL")
}

func TestErrorIsTyped(t *testing.T) {
	var e *Error
	assert.True(t, errors.As(Check(Queue, ""), &e))
	assert.Equal(t, &Error{Kind: Queue, Problem: Empty}, e)
}

// FuzzCheck: Check never panics, and refuses exactly what its rule names.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"", "q", "a/b", "..", "\x00", "\xff", strings.Repeat("x", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, k := range []Kind{Queue, Partition, ConsumerGroup} {
			err := Check(k, s)
			var e *Error
			if err != nil && !errors.As(err, &e) {
				t.Fatalf("untyped error %v", err)
			}
		}
	})
}

func TestDistance(t *testing.T) {
	assert.Equal(t, 0, Distance("leaseTime", "leaseTime"))
	assert.Equal(t, 3, Distance("leaseTimeout", "leaseTime"))
	assert.Equal(t, 1, Distance("idle-evic", "idle-evict"))
	assert.Equal(t, 5, Distance("", "hello"))
}
