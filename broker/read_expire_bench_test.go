package broker

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkPopAckWithExpiryRules is BenchmarkPopAck/sync=never on a queue
// with retentionSeconds and maxWaitTimeSeconds set (an hour: nothing
// expires), so the difference is the read-time expiry check's cost on the
// pop path (read_expire.go).
func BenchmarkPopAckWithExpiryRules(b *testing.B) {
	br := benchBroker(b, "never")
	o := DefaultQueueOptions()
	o.RetentionEnabled, o.RetentionSeconds, o.MaxWaitTimeSeconds = true, 3600, 3600
	_, err := br.Configure(ConfigureRequest{Queue: "bench", Options: o})
	require.NoError(b, err)
	benchPopAckOn(b, br)
}
