package fsck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/datadir"
)

// brokerDir is a data directory written by the real broker, with the metadata it
// holds (queue and partition names by id) so the tests can name partitions.
type brokerDir struct {
	root  string
	names map[[16]byte]datadir.PartInfo
	// pushed[partition name] = transactionIds in push order
	pushed map[string][]string
	// payloads[transactionId] = payload as pushed
	payloads map[string]string
}

// newBrokerDir pushes perPart messages to each of parts partitions of queue, in
// pushes of batch items (one segment each), with clock ticking 1 ms per push.
func newBrokerDir(t *testing.T, queue string, parts, perPart, batch int) *brokerDir {
	t.Helper()
	d := &brokerDir{root: t.TempDir(), names: map[[16]byte]datadir.PartInfo{}, pushed: map[string][]string{}, payloads: map[string]string{}}
	clock := time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC)
	b, err := broker.Open(broker.Config{DataDir: d.root, Sync: "never", Logger: zerolog.Nop(), Now: func() time.Time { return clock }})
	require.NoError(t, err)
	for i := 0; i < perPart; i += batch {
		for p := 0; p < parts; p++ {
			part := fmt.Sprintf("p%d", p)
			var items []broker.PushItem
			for j := i; j < min(perPart, i+batch); j++ {
				tx := fmt.Sprintf("%s-tx-%03d", part, j)
				payload := fmt.Sprintf(`{"part":%q,"n":%d}`, part, j)
				items = append(items, broker.PushItem{Queue: queue, Partition: part, TransactionID: tx, Payload: []byte(payload)})
				d.pushed[part] = append(d.pushed[part], tx)
				d.payloads[tx] = payload
			}
			res, err := b.Push(items)
			require.NoError(t, err)
			for _, r := range res {
				require.Equal(t, broker.PushQueued, r.Status)
				id := uuid.MustParse(r.PartitionID)
				d.names[id] = datadir.PartInfo{ID: id, Queue: queue, Name: r.Partition}
			}
		}
		clock = clock.Add(time.Millisecond)
	}
	require.NoError(t, b.Close())
	return d
}

func decodeLines(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	var lines []map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var m map[string]any
		require.NoError(t, dec.Decode(&m))
		lines = append(lines, m)
	}
	return lines
}
