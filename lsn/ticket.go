package lsn

// LSN numbers a commit log's entries from 1; 0 is no entry.
type LSN uint64

// Waiter is what a Ticket waits on: Wait blocks until the entry is durable
// and returns nil then, or the reason it never will be. It may be called any
// number of times, from any goroutine, and returns the same answer each time.
type Waiter interface{ Wait() error }

// WaitFunc adapts a function to Waiter.
type WaitFunc func() error

// Wait calls f.
func (f WaitFunc) Wait() error { return f() }

// Ticket is what an append returns: the LSN the log gave the entry and the
// wait for it to be durable. Entries become durable in LSN order, so waiting
// for the ticket with the highest LSN covers every lower one of the same log.
// The zero Ticket stands for no entry (nothing appended): Appended is false,
// Wait returns nil at once.
type Ticket struct {
	LSN LSN
	w   Waiter
}

// NewTicket returns the ticket of the entry numbered n, durable once w.Wait
// returns nil. w must not be nil.
func NewTicket(n LSN, w Waiter) Ticket { return Ticket{LSN: n, w: w} }

// Wait blocks until the ticket's entry is durable (see the package doc for
// what that means per log); nil for the zero Ticket. Errors are the log's.
func (t Ticket) Wait() error {
	if t.w == nil {
		return nil
	}
	return t.w.Wait()
}

// Appended reports whether t stands for an entry (false for the zero Ticket).
func (t Ticket) Appended() bool { return t.w != nil }

// Durable returns the ticket of entry n that is durable already (a stand-in
// log that keeps nothing, as fsck's while it rewrites a cursor snapshot):
// Wait returns nil at once, and Appended is true.
func Durable(n LSN) Ticket { return Ticket{LSN: n, w: durable{}} }

type durable struct{}

func (durable) Wait() error { return nil }
