// Package seal owns encryption at rest of message payloads (spec 9.2, issue 11): the keys
// (QUEEN_ENCRYPTION_KEY, 64 hex characters, plus previous keys kept for reading after a
// rotation), AES-256-GCM with a fresh random 16-byte IV per payload and a 16-byte tag, no
// additional data (Go: cipher.NewGCMWithNonceSize(block, 16)), and the sealed form below.
//
// It must not know about queues, HTTP or segment files: the broker decides which payloads are
// sealed (queues with encryptionEnabled) and where they are opened again (every read path).
//
// A sealed payload, as stored in place of the payload bytes (segment records, DLQ records,
// the commit log's transaction redo records: every copy of the payload is the sealed one):
//
//	+------+---------+-------------+--------------------------------------------------------+
//	| 0x00 | version | key id      | Queen's stored form, compact JSON                      |
//	| 1 B  | 1 B = 1 | 4 B         | {"encrypted":"<b64>","iv":"<b64>","authTag":"<b64>"}   |
//	+------+---------+-------------+--------------------------------------------------------+
//
// The leading 0x00 is what tells a sealed payload from a plain one: a stored plain payload is
// JSON text, which never starts with a NUL byte, so the marker cannot be faked by a push and a
// queue may hold both (encryption switched on or off over its life). The key id is the first 4
// bytes of SHA-256("comb/seal key id" ‖ key): it names the key that sealed the payload without
// revealing it, so Open picks the right key of the ring directly and can tell "no configured key
// sealed this" (ErrNoKey: a missing or wrong QUEEN_ENCRYPTION_KEY) from "the key fits but the
// bytes were altered" (ErrAuth). The JSON is the exact form Queen stores (standard base64 with
// padding; GCM's output split into ciphertext and tag), so a migration can hand it to Queen as is.
//
// Plaintext is the payload's compact JSON text, exactly as pushed. Never written anywhere:
// sealing happens before the payload reaches the journal or a segment.
package seal
