package peers

import (
	"github.com/combmq/comb/bench"

	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// RedisDriver maps the workloads onto Redis Streams: one stream per (queue, partition), one
// Redis consumer group per bench group (queue mode uses a group named "queue-mode", whose
// consumers compete exactly like Queen's __QUEUE_MODE__). Push is XADD pipelined per batch;
// pop is XREADGROUP with COUNT (and BLOCK for long-polls); ack is one XACK per stream.
type RedisDriver struct {
	addr  string
	rdb   *redis.Client
	keys  [][]string // [queue][partition] stream key
	runID string
}

const redisQueueModeGroup = "queue-mode"

// NewRedisDriver connects to addr (host:port) with a pool of conns connections.
func NewRedisDriver(addr string, conns int) *RedisDriver {
	return &RedisDriver{addr: addr, rdb: redis.NewClient(&redis.Options{
		Addr:         addr,
		PoolSize:     conns,
		MinIdleConns: 1,
		ReadTimeout:  bench.RequestTimeout,
		WriteTimeout: bench.RequestTimeout,
	})}
}

func (d *RedisDriver) Name() string   { return bench.DriverRedis }
func (d *RedisDriver) Target() string { return d.addr }
func (d *RedisDriver) Close() error   { return d.rdb.Close() }

func redisGroup(g string) string {
	if g == "" {
		return redisQueueModeGroup
	}
	return g
}

// Setup creates every stream with every group at ID 0 (whole backlog), like Queen's
// subscriptionMode "all".
func (d *RedisDriver) Setup(ctx context.Context, t bench.Topology) error {
	d.runID = t.RunID
	d.keys = make([][]string, t.Queues)
	for q := range d.keys {
		d.keys[q] = make([]string, t.Partitions)
		for p := range d.keys[q] {
			key := "bench:" + t.RunID + ":q" + strconv.Itoa(q) + ":p" + strconv.Itoa(p)
			d.keys[q][p] = key
			for _, g := range t.Groups {
				err := d.rdb.XGroupCreateMkStream(ctx, key, redisGroup(g), "0").Err()
				if err != nil && !strings.Contains(err.Error(), "BUSYGROUP") {
					return fmt.Errorf("redis: create group %s on %s: %w", redisGroup(g), key, err)
				}
			}
		}
	}
	return nil
}

// NewWorker returns a worker that is also one Redis consumer ("w<id>") in every group.
func (d *RedisDriver) NewWorker(id int) (bench.Worker, error) {
	return &redisWorker{d: d, consumer: "w" + strconv.Itoa(id), pipe: d.rdb.Pipeline()}, nil
}

type redisWorker struct {
	d        *RedisDriver
	consumer string
	pipe     redis.Pipeliner
	next     int // rotation over the worker's partitions
	streams  []string
	batch    redisBatch
}

type redisBatch struct {
	group string
	n     int
	keys  []string
	ids   [][]string
	sent  []int64
}

func (b *redisBatch) Len() int { return b.n }
func (b *redisBatch) SentNanos(i int) int64 {
	if i < len(b.sent) {
		return b.sent[i]
	}
	return 0
}

// Push pipelines n XADDs in one round trip; each failed command is a failed item.
func (w *redisWorker) Push(ctx context.Context, dst bench.Dest, payload []byte, n int) (int, error) {
	key := w.d.keys[dst.Queue][dst.Partition]
	for i := 0; i < n; i++ {
		w.pipe.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"d", payload}})
	}
	cmds, err := w.pipe.Exec(ctx)
	failed := 0
	for _, c := range cmds {
		if c.Err() != nil {
			failed++
		}
	}
	if err != nil && failed == len(cmds) {
		return 0, fmt.Errorf("redis XADD: %w", err)
	}
	return failed, nil
}

// Pop reads with XREADGROUP. Without Wait it tries the worker's streams in turn and returns
// the first non-empty one (the shape of a Queen pop with partitions=1); with Wait it blocks on
// all of them at once.
func (w *redisWorker) Pop(ctx context.Context, s bench.Source) (bench.Batch, error) {
	b := &w.batch
	b.group, b.n, b.keys, b.ids, b.sent = redisGroup(s.Group), 0, b.keys[:0], b.ids[:0], b.sent[:0]
	keys := w.d.keys[s.Queue]
	parts := s.Partitions
	if len(parts) == 0 {
		return b, nil
	}
	if s.Wait > 0 {
		w.streams = w.streams[:0]
		for _, p := range parts {
			w.streams = append(w.streams, keys[p])
		}
		for range parts {
			w.streams = append(w.streams, ">")
		}
		res, err := w.d.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: b.group, Consumer: w.consumer,
			Streams: w.streams, Count: int64(s.Max), Block: s.Wait}).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("redis XREADGROUP: %w", err)
		}
		w.fill(res, s.WantTimes)
		return b, nil
	}
	for range parts {
		key := keys[parts[w.next%len(parts)]]
		w.next++
		res, err := w.d.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: b.group, Consumer: w.consumer,
			Streams: []string{key, ">"}, Count: int64(s.Max), Block: -1}).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("redis XREADGROUP: %w", err)
		}
		if w.fill(res, s.WantTimes); b.n > 0 {
			break
		}
	}
	return b, nil
}

func (w *redisWorker) fill(res []redis.XStream, wantTimes bool) {
	b := &w.batch
	for _, st := range res {
		if len(st.Messages) == 0 {
			continue
		}
		ids := make([]string, len(st.Messages))
		for i, m := range st.Messages {
			ids[i] = m.ID
			if wantTimes {
				var t int64
				if v, ok := m.Values["d"].(string); ok {
					t = bench.PayloadTime([]byte(v))
				}
				b.sent = append(b.sent, t)
			}
		}
		b.keys = append(b.keys, st.Stream)
		b.ids = append(b.ids, ids)
		b.n += len(ids)
	}
}

// Ack sends one XACK per stream of the batch, pipelined; ids Redis did not count as pending
// are failed items.
func (w *redisWorker) Ack(ctx context.Context, bb bench.Batch) (int, error) {
	b, ok := bb.(*redisBatch)
	if !ok || b.n == 0 {
		return 0, nil
	}
	cmds := make([]*redis.IntCmd, len(b.keys))
	for i, k := range b.keys {
		cmds[i] = w.pipe.XAck(ctx, k, b.group, b.ids[i]...)
	}
	if _, err := w.pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("redis XACK: %w", err)
	}
	failed := 0
	for i, c := range cmds {
		failed += len(b.ids[i]) - int(c.Val())
	}
	return failed, nil
}

func (w *redisWorker) Close() error { w.pipe.Discard(); return nil }
