package peers

import (
	"github.com/combmq/comb/bench"

	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSDriver maps the workloads onto NATS JetStream: one file-storage stream per queue whose
// subjects are the queue's partitions (bench.<run>.q<i>.p<j>), one durable pull consumer per
// bench group (queue mode uses "queue-mode"; its fetchers compete like Queen's __QUEUE_MODE__).
// Push is PublishAsync for the batch, then waiting for every PubAck; pop is Fetch (no-wait, or
// a blocking fetch of one message for long-polls); ack is Ack on each message with a
// DoubleAck on the last, so one round trip confirms the batch.
type NATSDriver struct {
	url      string
	admin    *nats.Conn
	js       jetstream.JetStream
	streams  []string
	subjects [][]string
	runID    string
}

const natsQueueModeConsumer = "queue-mode"

// NewNATSDriver connects an admin connection to url; every worker opens its own.
func NewNATSDriver(url string) (*NATSDriver, error) {
	nc, err := nats.Connect(url, nats.Name("comb-bench-admin"))
	if err != nil {
		return nil, fmt.Errorf("nats: connect %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats: jetstream: %w", err)
	}
	return &NATSDriver{url: url, admin: nc, js: js}, nil
}

func (d *NATSDriver) Name() string   { return bench.DriverNATS }
func (d *NATSDriver) Target() string { return d.url }
func (d *NATSDriver) Close() error   { d.admin.Close(); return nil }

func natsConsumer(g string) string {
	if g == "" {
		return natsQueueModeConsumer
	}
	return g
}

// Setup creates the streams (file storage, limits retention, no size limit) and one durable
// pull consumer per group from the start of the stream (subscriptionMode "all"), explicit
// acks, no cap on pending acks so the fetchers of a run are never throttled by it.
func (d *NATSDriver) Setup(ctx context.Context, t bench.Topology) error {
	d.runID = t.RunID
	d.streams = make([]string, t.Queues)
	d.subjects = make([][]string, t.Queues)
	for q := range d.streams {
		name := "BENCH_" + t.RunID + "_Q" + strconv.Itoa(q)
		base := "bench." + t.RunID + ".q" + strconv.Itoa(q)
		d.streams[q] = name
		d.subjects[q] = make([]string, t.Partitions)
		for p := range d.subjects[q] {
			d.subjects[q][p] = base + ".p" + strconv.Itoa(p)
		}
		if _, err := d.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: name, Subjects: []string{base + ".>"}, Storage: jetstream.FileStorage,
			Retention: jetstream.LimitsPolicy, Discard: jetstream.DiscardOld,
		}); err != nil {
			return fmt.Errorf("nats: create stream %s: %w", name, err)
		}
		for _, g := range t.Groups {
			if _, err := d.js.CreateOrUpdateConsumer(ctx, name, jetstream.ConsumerConfig{
				Durable: natsConsumer(g), AckPolicy: jetstream.AckExplicitPolicy,
				DeliverPolicy: jetstream.DeliverAllPolicy, AckWait: bench.RequestTimeout, MaxAckPending: -1,
			}); err != nil {
				return fmt.Errorf("nats: create consumer %s on %s: %w", natsConsumer(g), name, err)
			}
		}
	}
	return nil
}

// NewWorker opens the worker's own connection.
func (d *NATSDriver) NewWorker(id int) (bench.Worker, error) {
	nc, err := nats.Connect(d.url, nats.Name("comb-bench-w"+strconv.Itoa(id)))
	if err != nil {
		return nil, fmt.Errorf("nats: connect %s: %w", d.url, err)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(1<<16))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats: jetstream: %w", err)
	}
	return &natsWorker{d: d, nc: nc, js: js, consumers: map[string]jetstream.Consumer{}}, nil
}

type natsWorker struct {
	d         *NATSDriver
	nc        *nats.Conn
	js        jetstream.JetStream
	consumers map[string]jetstream.Consumer // stream/consumer → handle
	futures   []jetstream.PubAckFuture
	batch     natsBatch
}

type natsBatch struct {
	msgs []jetstream.Msg
	sent []int64
}

func (b *natsBatch) Len() int { return len(b.msgs) }
func (b *natsBatch) SentNanos(i int) int64 {
	if i < len(b.sent) {
		return b.sent[i]
	}
	return 0
}

// Push publishes n messages asynchronously and waits for every PubAck (stored by the stream).
func (w *natsWorker) Push(ctx context.Context, dst bench.Dest, payload []byte, n int) (int, error) {
	subj := w.d.subjects[dst.Queue][dst.Partition]
	w.futures = w.futures[:0]
	failed := 0
	for i := 0; i < n; i++ {
		f, err := w.js.PublishAsync(subj, payload)
		if err != nil {
			failed++
			continue
		}
		w.futures = append(w.futures, f)
	}
	for _, f := range w.futures {
		select {
		case <-f.Ok():
		case <-f.Err():
			failed++
		case <-ctx.Done():
			return failed, fmt.Errorf("nats: publish: %w", ctx.Err())
		}
	}
	if failed == n {
		return 0, fmt.Errorf("nats: publish to %s: every item failed: %w", subj, bench.ErrBadResponse)
	}
	return failed, nil
}

func (w *natsWorker) consumer(ctx context.Context, q int, group string) (jetstream.Consumer, error) {
	key := w.d.streams[q] + "/" + natsConsumer(group)
	if c, ok := w.consumers[key]; ok {
		return c, nil
	}
	c, err := w.js.Consumer(ctx, w.d.streams[q], natsConsumer(group))
	if err != nil {
		return nil, fmt.Errorf("nats: consumer %s: %w", key, err)
	}
	w.consumers[key] = c
	return c, nil
}

// Pop fetches what is available now; with Wait and nothing available it blocks for one message
// (a blocking Fetch of a whole batch would hold the first message until the batch filled).
func (w *natsWorker) Pop(ctx context.Context, s bench.Source) (bench.Batch, error) {
	b := &w.batch
	b.msgs, b.sent = b.msgs[:0], b.sent[:0]
	c, err := w.consumer(ctx, s.Queue, s.Group)
	if err != nil {
		return nil, err
	}
	mb, err := c.FetchNoWait(s.Max)
	if err != nil {
		return nil, fmt.Errorf("nats: fetch: %w", err)
	}
	if err := w.drain(mb, s.WantTimes); err != nil {
		return nil, err
	}
	if len(b.msgs) == 0 && s.Wait > 0 {
		mb, err := c.Fetch(1, jetstream.FetchMaxWait(s.Wait))
		if err != nil {
			return nil, fmt.Errorf("nats: fetch: %w", err)
		}
		if err := w.drain(mb, s.WantTimes); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (w *natsWorker) drain(mb jetstream.MessageBatch, wantTimes bool) error {
	b := &w.batch
	for m := range mb.Messages() {
		b.msgs = append(b.msgs, m)
		if wantTimes {
			b.sent = append(b.sent, bench.PayloadTime(m.Data()))
		}
	}
	if err := mb.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
		return fmt.Errorf("nats: fetch: %w", err)
	}
	return nil
}

// Ack acks every message and waits for the server's confirmation of the last one; acks on
// one connection are processed in order, so that confirms the batch.
func (w *natsWorker) Ack(ctx context.Context, bb bench.Batch) (int, error) {
	b, ok := bb.(*natsBatch)
	if !ok || len(b.msgs) == 0 {
		return 0, nil
	}
	failed := 0
	for _, m := range b.msgs[:len(b.msgs)-1] {
		if err := m.Ack(); err != nil {
			failed++
		}
	}
	actx, cancel := context.WithTimeout(ctx, bench.RequestTimeout)
	defer cancel()
	if err := b.msgs[len(b.msgs)-1].DoubleAck(actx); err != nil {
		return failed, fmt.Errorf("nats: ack: %w", err)
	}
	return failed, nil
}

func (w *natsWorker) Close() error { w.nc.Close(); return nil }
