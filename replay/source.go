package replay

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/combmq/comb/datadir"
	"github.com/combmq/comb/dump"
	"github.com/combmq/comb/seal"
	"github.com/combmq/comb/segment"
)

// fromDataDir replays the selected partitions of an offline data directory,
// Concurrency partitions at a time, each from its resume offset in offset order.
// A partition's records are those the server would serve after recovery
// (datadir.View.EachRecovered): its files below their durable end, then the records
// only the commit log holds, which were acknowledged too.
func (r *replayer) fromDataDir(ctx context.Context) error {
	abs, err := filepath.Abs(r.opts.DataDir)
	if err != nil {
		return err
	}
	if err := datadir.Check(abs); err != nil {
		return err
	}
	v, err := datadir.Load(abs, func([16]byte) bool { return true })
	if err != nil {
		return err
	}
	logs, names, err := datadir.SelectLogs(abs, v, r.opts.Queue, r.opts.Partition, r.opts.PartitionID, false)
	if err != nil {
		return err
	}
	if err := r.carryConfig(ctx, r.sourceQueues(v, logs, names)); err != nil {
		return err
	}
	var total int64
	for _, d := range logs {
		first, fileNext := uint64(0), uint64(0)
		if files, err := datadir.ListSegFiles(d.Path); err == nil && len(files) > 0 {
			first, fileNext = files[0].FirstOffset, datadir.IndexEnd(d.Path, files[len(files)-1])
		}
		end, _ := v.RecoveredNext(d, fileNext)
		from := max(first, r.state.done(logKey(d))+1)
		if end > from {
			total += int64(end - from)
		}
	}
	r.newBar(total)
	r.stats.Partitions = len(logs)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan datadir.LogDir)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	// A damaged partition stops only itself: the others are pushed, and the run ends with
	// every damaged partition named (as comb dump does), never a success.
	var damagedMu sync.Mutex
	var damaged []error
	for i := 0; i < r.opts.Concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range work {
				err := r.replayLog(ctx, v, d, names[d.Rel])
				switch {
				case err == nil:
				case errors.Is(err, ErrSourceDamaged):
					damagedMu.Lock()
					damaged = append(damaged, err)
					damagedMu.Unlock()
				default:
					once.Do(func() { firstErr = err; cancel() })
				}
			}
		}()
	}
feed:
	for _, d := range logs {
		select {
		case work <- d:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// What could be read was pushed; records past a damaged segment, or only
	// in the commit log's unread entries, were not, and the run must not look
	// complete.
	slices.SortFunc(damaged, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(append(damaged, v.WAL.Unread())...)
}

func (r *replayer) replayLog(ctx context.Context, v *datadir.View, d datadir.LogDir, n datadir.PartInfo) error {
	s := r.newSender(logKey(d), n.Queue, n.Name)
	if s.queue == "" || s.partition == "" {
		return fmt.Errorf("%s: the metadata does not name this partition; give --to-queue and --to-partition", d.Rel)
	}
	from := r.state.done(s.key) + 1
	if files, err := datadir.ListSegFiles(d.Path); err == nil && len(files) > 0 && from > files[0].FirstOffset {
		r.skip.Add(int64(from - files[0].FirstOffset))
	}
	var err error
	serr := v.EachRecovered(d, from, func(seg datadir.SegInfo, _ uint64, msgs []segment.Message) bool {
		if r.opts.ToMicros != 0 && seg.TsMicros > r.opts.ToMicros {
			return false // timestamps never decrease within a partition
		}
		for i := range msgs {
			m := &msgs[i]
			if m.Offset < from {
				continue
			}
			payload := m.Payload
			if seal.IsSealed(payload) { // encryption at rest (issue 11): push the plaintext
				if !r.targets[s.queue].seals && !r.opts.AllowPlaintext {
					// Sealed in a queue configured without encryption now (it was switched
					// off): its target queue would hold the plaintext of what was sealed.
					err = fmt.Errorf("%s offset %d: an encrypted payload, and target queue %q does not seal its payloads: %w; pass --allow-plaintext to store it in plaintext there",
						d.Rel, m.Offset, s.queue, ErrPlaintextTarget)
					return false
				}
				if payload, err = r.opts.Keys.Open(payload); err != nil {
					err = fmt.Errorf("%s offset %d: encrypted payload (set QUEEN_ENCRYPTION_KEY, and COMB_ENCRYPTION_PREVIOUS_KEYS for retired keys): %w", d.Rel, m.Offset, err)
					return false
				}
			}
			// The payload bytes alias scan memory valid only inside this callback.
			rec := replayRecord{Offset: m.Offset, TsMicros: m.TimestampMicros, TransactionID: m.TransactionID,
				TraceID: m.TraceID, Payload: append(json.RawMessage(nil), payload...)}
			if err = s.add(ctx, rec); err != nil {
				return false
			}
		}
		return ctx.Err() == nil
	})
	if err != nil {
		return err
	}
	if serr != nil {
		// The records read before the damage go to the target first, so a damaged segment
		// costs only what it holds and what follows it.
		if err := s.flush(ctx); err != nil {
			return err
		}
		return fmt.Errorf("%s: %w: %w", d.Rel, ErrSourceDamaged, serr)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.flush(ctx)
}

// fromDump replays a `comb dump --payload` file. Lines are read in order; each run of
// records of one partition becomes a stream pushed by its own goroutine, at most
// Concurrency streams at a time, and a partition whose records appear again later
// waits for its previous stream, so per-partition order is the file's.
func (r *replayer) fromDump(ctx context.Context) error {
	var in io.Reader = os.Stdin
	if r.opts.DumpFile != "-" {
		f, err := os.Open(r.opts.DumpFile)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	r.newBar(-1)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, r.opts.Concurrency)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	fail := func(err error) { once.Do(func() { firstErr = err; cancel() }) }
	lastDone := map[string]chan struct{}{} // key → closed when its latest stream finished
	seen := map[string]bool{}
	var cur chan replayRecord
	curKey := ""
	endStream := func() {
		if cur != nil {
			close(cur)
			cur = nil
		}
	}
	startStream := func(queue, partition string) {
		key := stateKey(queue, partition)
		prev := lastDone[key]
		done := make(chan struct{})
		lastDone[key] = done
		ch := make(chan replayRecord, 256)
		cur, curKey = ch, key
		if !seen[key] {
			seen[key] = true
			r.stats.Partitions++
		}
		acquired := false
		select {
		case sem <- struct{}{}:
			acquired = true
		case <-ctx.Done(): // cancelled: the stream only drains its channel
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if acquired {
					<-sem
				}
			}()
			defer close(done)
			if prev != nil {
				<-prev
			}
			s := r.newSender(key, queue, partition)
			for rec := range ch {
				if ctx.Err() != nil {
					continue // drain so the reader never blocks
				}
				if err := s.add(ctx, rec); err != nil {
					fail(err)
				}
			}
			if ctx.Err() == nil {
				if err := s.flush(ctx); err != nil {
					fail(err)
				}
			}
		}()
	}

	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	line := 0
	var readErr error
	for sc.Scan() && ctx.Err() == nil {
		line++
		rec, ok, err := parseDumpLine(sc.Bytes())
		if err != nil {
			readErr = fmt.Errorf("line %d: %w", line, err)
			break
		}
		if !ok {
			continue
		}
		if (r.opts.Queue != "" && rec.Queue != r.opts.Queue) || (r.opts.Partition != "" && rec.Partition != r.opts.Partition) {
			continue
		}
		if key := stateKey(rec.Queue, rec.Partition); cur == nil || key != curKey {
			endStream()
			startStream(rec.Queue, rec.Partition)
		}
		trace := ""
		if rec.TraceID != nil {
			trace = *rec.TraceID
		}
		select {
		case cur <- replayRecord{Offset: rec.Offset, TsMicros: rec.TsMicros, TransactionID: rec.TransactionID, TraceID: trace, Payload: rec.Payload}:
		case <-ctx.Done():
		}
	}
	if readErr == nil {
		readErr = sc.Err()
	}
	endStream()
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if readErr != nil {
		return readErr
	}
	return ctx.Err()
}

// parseDumpLine decodes one line of a dump file. ok is false for lines that are not
// replayable records (partition, segment and index lines, dead letters); an error
// wraps ErrBadDump. It never panics on any input.
func parseDumpLine(b []byte) (rec dump.Record, ok bool, err error) {
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, false, fmt.Errorf("%w: %v", ErrBadDump, err)
	}
	if rec.Type != dump.TypeRecord || rec.DLQ {
		return rec, false, nil
	}
	if rec.Payload == nil && rec.PayloadBytes > 0 {
		return rec, false, fmt.Errorf("%w: record without payload (make the dump with --payload)", ErrBadDump)
	}
	if rec.Queue == "" || rec.Partition == "" {
		return rec, false, fmt.Errorf("%w: record without queue and partition names", ErrBadDump)
	}
	if rec.Payload != nil && !json.Valid(rec.Payload) {
		return rec, false, fmt.Errorf("%w: payload is not JSON", ErrBadDump)
	}
	if sealedInDump(rec.Payload) {
		// dump writes a payload that is not JSON as a base64 string: a sealed one would be
		// replayed as that string, neither the message nor its plaintext.
		return rec, false, fmt.Errorf("%w: an encrypted payload (encryptionEnabled), dumped sealed; replay from the data directory with QUEEN_ENCRYPTION_KEY set instead", ErrBadDump)
	}
	return rec, true, nil
}

// logKey names a data-directory partition in the resume state: its id, which unlike
// its name survives a queue rename (dump files, which carry no stable directory,
// use queue and partition names instead).
func logKey(d datadir.LogDir) string { return d.Rel }

// sealedInDump reports whether a dump line's payload is the base64 string dump writes for a
// payload sealed at rest.
func sealedInDump(p json.RawMessage) bool {
	if len(p) < 2 || p[0] != '"' {
		return false
	}
	var str string
	if json.Unmarshal(p, &str) != nil {
		return false
	}
	b, err := base64.StdEncoding.DecodeString(str)
	return err == nil && seal.IsSealed(b)
}
