package datadirtest

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

// BrokerDir is a data directory written by the real broker, with the metadata it
// holds (queue and partition names by id) so the tests can name partitions.
type BrokerDir struct {
	Root  string
	Names map[[16]byte]datadir.PartInfo
	// Pushed[partition name] = transactionIds in push order
	Pushed map[string][]string
	// Payloads[transactionId] = payload as pushed
	Payloads map[string]string
}

// NewBrokerDir pushes perPart messages to each of parts partitions of queue, in
// pushes of batch items (one segment each), with clock ticking 1 ms per push.
func NewBrokerDir(t *testing.T, queue string, parts, perPart, batch int) *BrokerDir {
	t.Helper()
	d := &BrokerDir{Root: t.TempDir(), Names: map[[16]byte]datadir.PartInfo{}, Pushed: map[string][]string{}, Payloads: map[string]string{}}
	clock := time.Date(2026, 7, 30, 9, 0, 0, 0, time.UTC)
	b, err := broker.Open(broker.Config{DataDir: d.Root, Sync: "never", Logger: zerolog.Nop(), Now: func() time.Time { return clock }})
	require.NoError(t, err)
	for i := 0; i < perPart; i += batch {
		for p := 0; p < parts; p++ {
			part := fmt.Sprintf("p%d", p)
			var items []broker.PushItem
			for j := i; j < min(perPart, i+batch); j++ {
				tx := fmt.Sprintf("%s-tx-%03d", part, j)
				payload := fmt.Sprintf(`{"part":%q,"n":%d}`, part, j)
				items = append(items, broker.PushItem{Queue: queue, Partition: part, TransactionID: tx, Payload: []byte(payload)})
				d.Pushed[part] = append(d.Pushed[part], tx)
				d.Payloads[tx] = payload
			}
			res, err := b.Push(items)
			require.NoError(t, err)
			for _, r := range res {
				require.Equal(t, broker.PushQueued, r.Status)
				id := uuid.MustParse(r.PartitionID)
				d.Names[id] = datadir.PartInfo{ID: id, Queue: queue, Name: r.Partition}
			}
		}
		clock = clock.Add(time.Millisecond)
	}
	require.NoError(t, b.Close())
	return d
}

// DecodeLines decodes a dump's output, one JSON object a line.
func DecodeLines(t *testing.T, out []byte) []map[string]any {
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
