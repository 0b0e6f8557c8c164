package broker

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/lease"
)

// lease.MaxLeaseSeconds: a leaseSeconds near int64 max once overflowed
// now + seconds·10⁶ into the past, giving a lease born expired that a second
// pop of the same group claimed again at once.
func TestHugeLeaseSecondsAreCappedNotBornExpired(t *testing.T) {
	cases := []struct {
		name    string
		seconds int64
	}{
		{"int64 max leaseSeconds", math.MaxInt64},
		{"leaseSeconds past year 9999", 99999999999999},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.push("q", "p", "a")
			first := e.pop(PopRequest{Queue: "q", Group: "g", LeaseSeconds: c.seconds})
			require.Equal(t, []string{"a"}, txids(first))
			assert.Empty(t, e.pop(PopRequest{Queue: "q", Group: "g"}).Messages, "the lease must be live")
			st, ok := e.b.cur.Get(cursorKey(e, "q", "p", "g"))
			require.True(t, ok)
			assert.Equal(t, e.clk.Now().UnixMicro()+lease.MaxLeaseSeconds*1_000_000, st.Lease.ExpiresAtMicros)
		})
	}
}

// spec 6 with lease.MaxLeaseSeconds: a huge extend renews to the cap.
func TestHugeExtendSecondsAreCapped(t *testing.T) {
	e := newEnv(t)
	e.push("q", "p", "a")
	res := e.pop(PopRequest{Queue: "q", Group: "g", LeaseSeconds: 10})
	require.Len(t, res.Messages, 1)
	ext := e.b.ExtendLease(res.LeaseID, 99999999999999)
	assert.Equal(t, 1, ext.Renewed)
	assert.Equal(t, e.clk.Now().Add(lease.MaxLeaseSeconds*time.Second).UnixMicro(), ext.NewExpiresAtMicros)
}
