package broker

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/combmq/comb/seal"
)

// atRest is payload encryption at rest (spec 9.2, issue 11): push and transaction push seal
// the payloads of queues with encryptionEnabled before anything is written (so the segment
// files, the DLQ copies and the commit log's transaction redo records all hold the sealed
// form), and every read path (pop, DLQ listing) opens them again. A payload that cannot be
// opened is never handed out as if it were the payload: the message carries PayloadError and
// no payload, the failure is logged (sampled) and counted.
type atRest struct {
	sealed       atomic.Uint64 // payloads sealed
	openFailures atomic.Uint64 // sealed payloads a read could not open
	plainStores  atomic.Uint64 // payloads of encryptionEnabled queues stored plain: no key

	warnOnce sync.Map // queue name → struct{}: "no key" warned once per queue
	logOnce  sync.Once
	failLog  zerolog.Logger // sampled: a consumer retrying an unreadable message logs a few lines a minute
}

// storedPayload returns the bytes to store for payload in q: sealed with Config.Keys when q
// has encryptionEnabled. Without a key the payload is stored plain, as Queen does (spec 9.2),
// with a warning per queue and a count (comb_payloads_stored_plain_total).
func (b *Broker) storedPayload(q *queue, payload []byte) ([]byte, error) {
	if !q.options().EncryptionEnabled {
		return payload, nil
	}
	if b.cfg.Keys == nil {
		b.rest.plainStores.Add(1)
		if _, warned := b.rest.warnOnce.LoadOrStore(q.name, struct{}{}); !warned {
			b.log.Warn().Str("queue", q.name).
				Msg("queue has encryptionEnabled but no QUEEN_ENCRYPTION_KEY is configured: its payloads are stored in plaintext")
		}
		return payload, nil
	}
	sealed, err := b.cfg.Keys.Seal(payload)
	if err != nil {
		return nil, fmt.Errorf("queue %s: %w", q.name, err)
	}
	b.rest.sealed.Add(1)
	return sealed, nil
}

// readPayload returns what a reader of q's message id may see of a stored payload: the
// payload itself when it is not sealed, its plaintext when a configured key opens it, and
// otherwise no payload and the reason (for Message.PayloadError).
func (b *Broker) readPayload(q *queue, id [16]byte, stored []byte) ([]byte, string) {
	if !seal.IsSealed(stored) {
		return stored, ""
	}
	plain, err := b.cfg.Keys.Open(stored)
	if err == nil {
		return plain, ""
	}
	b.rest.openFailures.Add(1)
	b.rest.logOnce.Do(func() {
		b.rest.failLog = b.log.Sample(&zerolog.BurstSampler{Burst: 5, Period: time.Minute})
	})
	reason := "the payload is encrypted and cannot be decrypted: "
	switch {
	case errors.Is(err, seal.ErrNoKey):
		reason += "it was sealed with a key this broker does not hold (check QUEEN_ENCRYPTION_KEY and the previous keys)"
	case errors.Is(err, seal.ErrAuth):
		reason += "the stored bytes do not authenticate (damaged or altered)"
	default:
		reason += "the stored form is malformed"
	}
	b.rest.failLog.Error().Err(err).Str("queue", q.name).Str("messageId", uuidString(id)).
		Msg("cannot decrypt a stored payload; delivered without it")
	return nil, reason
}

// warnEncryptionWithoutKey says at Open which queues have encryptionEnabled while no key is
// configured: the most common mistake (a restart without QUEEN_ENCRYPTION_KEY) makes their
// encrypted payloads unreadable and their new ones plaintext, so it is said before the first
// consumer sees a decryptionError.
func (b *Broker) warnEncryptionWithoutKey() {
	if b.cfg.Keys != nil {
		return
	}
	for _, q := range b.sortedQueues() {
		if q.options().EncryptionEnabled {
			b.rest.warnOnce.Store(q.name, struct{}{})
			b.log.Warn().Str("queue", q.name).
				Msg("queue has encryptionEnabled but no QUEEN_ENCRYPTION_KEY is configured: payloads it holds encrypted cannot be read (delivered as data null with decryptionError) and new ones are stored in plaintext")
		}
	}
}
