package queenimport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/seal"
)

// Side is one broker's view of a partition for Verify.
type Side struct {
	Count       int64
	First, Last string // message ids ("" when empty)
	Checksum    uint64 // xxhash64 over (id, payload as comb stores it) in order
}

// Difference is one thing Verify found unequal.
type Difference struct {
	Queue, Partition, Group string // Group "" for a partition's messages
	What                    string
	Queen, Comb             string
}

func (d Difference) String() string {
	where := fmt.Sprintf("queue %s partition %s", d.Queue, d.Partition)
	if d.Group != "" {
		where += " group " + d.Group
	}
	return fmt.Sprintf("%s: %s: queen %s, comb %s", where, d.What, d.Queen, d.Comb)
}

// Verify compares Queen's tables with b, per partition (message count, first and last id,
// a checksum of ids and payloads in order), per (partition, group) cursor (the last consumed
// message) and per queue the number of dead letters. It returns every difference (none when
// comb holds exactly what Queen does at the snapshot) or an error when it could not compare.
func Verify(ctx context.Context, conn *pgx.Conn, b *broker.Broker, key *seal.Key) ([]Difference, error) {
	diffs, _, err := compare(ctx, conn, b, key)
	return diffs, err
}

// Tally counts what each side holds of what Verify compares, per table of Queen's
// (queues, partitions, messages, partition_consumers, dead_letter_queue): Queen's rows and
// what comb holds of them.
type Tally struct {
	Table       string
	Queen, Comb int64
}

func compare(ctx context.Context, conn *pgx.Conn, b *broker.Broker, key *seal.Key) ([]Difference, []Tally, error) {
	snap, err := ReadSnapshot(ctx, conn)
	if err != nil {
		return nil, nil, err
	}
	tally := []Tally{{Table: "queues"}, {Table: "partitions"}, {Table: "messages"}, {Table: "partition_consumers"}, {Table: "dead_letter_queue"}}
	tally[0].Queen = int64(len(snap.Queues))
	for _, q := range snap.Queues {
		if _, err := b.DLQCount(q.Name); err == nil {
			tally[0].Comb++
		}
	}
	tally[1].Queen = int64(len(snap.Partitions))
	tally[3].Queen = int64(len(snap.Consumers))
	tally[4].Queen = int64(len(snap.DeadLetters))
	var diffs []Difference
	parts := make(map[[16]byte]Partition, len(snap.Partitions))
	for _, p := range snap.Partitions {
		parts[p.ID] = p
		var q Side
		h := xxhash.New()
		err := ReadMessages(ctx, conn, p, time.Time{}, [16]byte{}, func(page []Message) error {
			for i := range page {
				m, err := importMessage(&page[i], key)
				if err != nil {
					return err
				}
				addSide(&q, h, m.ID, m.Payload)
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		q.Checksum = h.Sum64()
		tally[2].Queen += q.Count
		var c Side
		h = xxhash.New()
		err = b.ScanPartition(p.Queue, p.Name, func(_ uint64, id [16]byte, _ string, payload []byte, _ int64) error {
			addSide(&c, h, id, payload)
			return nil
		})
		if errors.Is(err, broker.ErrNotFound) {
			diffs = append(diffs, Difference{Queue: p.Queue, Partition: p.Name, What: "partition", Queen: "present", Comb: "missing"})
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		c.Checksum = h.Sum64()
		tally[1].Comb++
		tally[2].Comb += c.Count
		d := func(what, a, b string) {
			if a != b {
				diffs = append(diffs, Difference{Queue: p.Queue, Partition: p.Name, What: what, Queen: a, Comb: b})
			}
		}
		d("message count", fmt.Sprint(q.Count), fmt.Sprint(c.Count))
		d("first message id", q.First, c.First)
		d("last message id", q.Last, c.Last)
		d("checksum of ids and payloads", fmt.Sprintf("%016x", q.Checksum), fmt.Sprintf("%016x", c.Checksum))
	}
	for _, cs := range snap.Consumers {
		p, ok := parts[cs.PartitionID]
		if !ok {
			continue
		}
		_, txid, ok, err := b.CursorOf(p.Queue, p.Name, cs.Group)
		if err != nil && !errors.Is(err, broker.ErrNotFound) {
			return nil, nil, err
		}
		if ok {
			tally[3].Comb++
		}
		comb := "after " + quoteTx(txid)
		if !ok {
			comb = "no cursor"
		}
		if queen := "after " + quoteTx(cs.LastTransactionID); queen != comb {
			diffs = append(diffs, Difference{Queue: p.Queue, Partition: p.Name, Group: cs.Group, What: "cursor", Queen: queen, Comb: comb})
		}
	}
	dlq := make(map[string]int64)
	for _, d := range snap.DeadLetters {
		if p, ok := parts[d.PartitionID]; ok {
			dlq[p.Queue]++
		}
	}
	for _, q := range snap.Queues {
		n, err := b.DLQCount(q.Name)
		if err != nil && !errors.Is(err, broker.ErrNotFound) {
			return nil, nil, err
		}
		tally[4].Comb += n
		if n != dlq[q.Name] {
			diffs = append(diffs, Difference{Queue: q.Name, Partition: "*", What: "dead letters", Queen: fmt.Sprint(dlq[q.Name]), Comb: fmt.Sprint(n)})
		}
	}
	return diffs, tally, nil
}

func addSide(s *Side, h *xxhash.Digest, id [16]byte, payload []byte) {
	ids := uuid.UUID(id).String()
	if s.Count == 0 {
		s.First = ids
	}
	s.Last = ids
	s.Count++
	_, _ = h.Write(id[:])
	var n [8]byte
	for i, l := 0, uint64(len(payload)); i < 8; i++ {
		n[i] = byte(l >> (8 * i))
	}
	_, _ = h.Write(n[:])
	_, _ = h.Write(payload)
}

func quoteTx(txid string) string {
	if txid == "" {
		return "the start"
	}
	return fmt.Sprintf("%q", txid)
}
