package lsn

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestZeroTicketIsNoEntry(t *testing.T) {
	var tk Ticket
	assert.False(t, tk.Appended(), "the zero Ticket stands for nothing appended")
	assert.NoError(t, tk.Wait(), "waiting for nothing returns at once")
	assert.Equal(t, LSN(0), tk.LSN)
}

func TestTicketWaitsOnItsWaiter(t *testing.T) {
	calls := 0
	boom := errors.New("sync failed")
	tk := NewTicket(7, WaitFunc(func() error { calls++; return boom }))
	assert.True(t, tk.Appended())
	assert.Equal(t, LSN(7), tk.LSN)
	assert.ErrorIs(t, tk.Wait(), boom, "Wait returns the log's answer")
	cp := tk
	assert.ErrorIs(t, cp.Wait(), boom, "a copy waits on the same entry")
	assert.Equal(t, 2, calls)
}

func TestDurableTicket(t *testing.T) {
	tk := Durable(3)
	assert.True(t, tk.Appended(), "a durable ticket stands for an entry")
	assert.Equal(t, LSN(3), tk.LSN)
	assert.NoError(t, tk.Wait())
}
