package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Sizes of spec 9.2.
const (
	KeySize    = 32 // AES-256
	IVSize     = 16
	TagSize    = 16
	version    = 1
	headerSize = 6 // marker, version, key id
)

// Errors of Open. Each is wrapped with the key id of the payload.
var (
	// ErrNoKey: the payload was sealed with a key the ring does not hold (QUEEN_ENCRYPTION_KEY
	// missing, or rotated without keeping the old key as a previous key).
	ErrNoKey = errors.New("sealed with a key that is not configured")
	// ErrAuth: a key with the payload's id is configured but the GCM tag does not verify: the
	// stored bytes were damaged or altered.
	ErrAuth = errors.New("does not authenticate (damaged or altered)")
	// ErrMalformed: the bytes start like a sealed payload but are not one.
	ErrMalformed = errors.New("malformed sealed payload")
)

// Key is one AES-256-GCM key with its id.
type Key struct {
	id   [4]byte
	aead cipher.AEAD
}

// ParseKey parses 64 hex characters (QUEEN_ENCRYPTION_KEY, spec 9.2).
func ParseKey(hexKey string) (*Key, error) {
	hexKey = strings.TrimSpace(hexKey)
	if len(hexKey) != 2*KeySize {
		return nil, fmt.Errorf("encryption key: want %d hex characters (32 bytes), got %d characters", 2*KeySize, len(hexKey))
	}
	raw, err := hex.DecodeString(hexKey)
	if err != nil {
		return nil, fmt.Errorf("encryption key: not hex: %w", err)
	}
	return NewKey(raw)
}

// NewKey makes a Key of 32 raw bytes.
func NewKey(raw []byte) (*Key, error) {
	if len(raw) != KeySize {
		return nil, fmt.Errorf("encryption key: want %d bytes, got %d", KeySize, len(raw))
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	aead, err := cipher.NewGCMWithNonceSize(block, IVSize)
	if err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	h := sha256.New()
	h.Write([]byte("comb/seal key id"))
	h.Write(raw)
	k := &Key{aead: aead}
	copy(k.id[:], h.Sum(nil))
	return k, nil
}

// ID is the key's id as 8 hex characters (what logs and errors name).
func (k *Key) ID() string { return hex.EncodeToString(k.id[:]) }

// Keyring seals with its current key and opens with any of its keys. A nil *Keyring seals
// nothing (Seal fails) and opens nothing (Open of a sealed payload is ErrNoKey).
type Keyring struct {
	current *Key
	keys    []*Key // current first, then the previous ones
}

// NewKeyring returns a ring sealing with current and opening with current and previous.
func NewKeyring(current *Key, previous ...*Key) *Keyring {
	return &Keyring{current: current, keys: append([]*Key{current}, previous...)}
}

// ParseKeyring parses the current key and the previous ones (64 hex characters each).
func ParseKeyring(currentHex string, previousHex []string) (*Keyring, error) {
	cur, err := ParseKey(currentHex)
	if err != nil {
		return nil, err
	}
	prev := make([]*Key, 0, len(previousHex))
	for i, h := range previousHex {
		k, err := ParseKey(h)
		if err != nil {
			return nil, fmt.Errorf("previous key %d: %w", i+1, err)
		}
		prev = append(prev, k)
	}
	return NewKeyring(cur, prev...), nil
}

// CurrentID is the id of the key that seals.
func (r *Keyring) CurrentID() string { return r.current.ID() }

// IDs lists every key's id, current first.
func (r *Keyring) IDs() []string {
	out := make([]string, len(r.keys))
	for i, k := range r.keys {
		out[i] = k.ID()
	}
	return out
}

// IsSealed reports whether stored is a sealed payload (its first byte is the 0x00 marker).
func IsSealed(stored []byte) bool { return len(stored) > 0 && stored[0] == 0 }

// The constant parts of the JSON form Seal writes (Queen's stored form, spec 9.2).
const (
	formEncrypted = `{"encrypted":"`
	formIV        = `","iv":"`
	formAuthTag   = `","authTag":"`
	formEnd       = `"}`
)

// splitForm returns the three base64 fields of the exact JSON form Seal writes. Open reads
// only what Seal wrote (the 0x00 header guarantees it), so it need not accept other spellings
// of the same JSON; FuzzOpen covers this decoder.
func splitForm(form []byte) (ct, iv, tag []byte, ok bool) {
	field := func(prefix string) []byte {
		if !ok || !bytes.HasPrefix(form, []byte(prefix)) {
			ok = false
			return nil
		}
		form = form[len(prefix):]
		end := bytes.IndexByte(form, '"')
		if end < 0 {
			ok = false
			return nil
		}
		f := form[:end]
		form = form[end:]
		return f
	}
	ok = true
	ct, iv, tag = field(formEncrypted), field(formIV), field(formAuthTag)
	return ct, iv, tag, ok && string(form) == formEnd
}

// sealScratch recycles Seal's scratch buffers (IV + ciphertext + tag).
var sealScratch = sync.Pool{New: func() any { return new([]byte) }}

// putSealScratch returns sp unless one huge payload grew it.
func putSealScratch(sp *[]byte) {
	if cap(*sp) <= 1<<20 {
		sealScratch.Put(sp)
	}
}

// Seal encrypts plaintext with the current key and a fresh random IV and returns the sealed
// form. Errors: a nil ring, or the system's random source failing.
func (r *Keyring) Seal(plaintext []byte) ([]byte, error) {
	if r == nil {
		return nil, errors.New("seal: no encryption key configured")
	}
	// The IV and the GCM output go to a pooled scratch buffer (an array on the stack would
	// escape through the cipher.AEAD interface): the sealed form is this call's one allocation.
	sp := sealScratch.Get().(*[]byte)
	defer putSealScratch(sp)
	need := IVSize + len(plaintext) + TagSize
	if cap(*sp) < need {
		*sp = make([]byte, need)
	}
	iv := (*sp)[:IVSize]
	if _, err := rand.Read(iv); err != nil {
		return nil, fmt.Errorf("seal: random IV: %w", err)
	}
	sealed := r.current.aead.Seal((*sp)[IVSize:IVSize], iv, plaintext, nil)
	ct, tag := sealed[:len(plaintext)], sealed[len(plaintext):]
	enc := base64.StdEncoding
	n := headerSize + len(formEncrypted+formIV+formAuthTag+formEnd) +
		enc.EncodedLen(len(ct)) + enc.EncodedLen(IVSize) + enc.EncodedLen(TagSize)
	out := make([]byte, 0, n)
	out = append(out, 0, version)
	out = append(out, r.current.id[:]...)
	out = append(out, formEncrypted...)
	out = enc.AppendEncode(out, ct)
	out = append(out, formIV...)
	out = enc.AppendEncode(out, iv)
	out = append(out, formAuthTag...)
	out = enc.AppendEncode(out, tag)
	out = append(out, formEnd...)
	return out, nil
}

// KeyID returns the id of the key that sealed stored (8 hex characters); false when stored is
// not sealed or too short to carry one.
func KeyID(stored []byte) (string, bool) {
	if !IsSealed(stored) || len(stored) < headerSize {
		return "", false
	}
	return hex.EncodeToString(stored[2:headerSize]), true
}

// QueenForm returns the JSON part of a sealed payload (Queen's stored form), for tools that
// show or migrate it; false when stored is not sealed.
func QueenForm(stored []byte) ([]byte, bool) {
	if !IsSealed(stored) || len(stored) < headerSize {
		return nil, false
	}
	return stored[headerSize:], true
}

// Open returns the plaintext of a sealed payload. Errors (wrapped with the key id): ErrNoKey,
// ErrAuth, ErrMalformed. stored that is not sealed is an ErrMalformed: callers check IsSealed.
func (r *Keyring) Open(stored []byte) ([]byte, error) {
	if !IsSealed(stored) || len(stored) < headerSize {
		return nil, ErrMalformed
	}
	if stored[1] != version {
		return nil, fmt.Errorf("%w: version %d", ErrMalformed, stored[1])
	}
	id := stored[2:headerSize]
	ctB64, ivB64, tagB64, ok := splitForm(stored[headerSize:])
	if !ok {
		return nil, fmt.Errorf("key %x: %w: not the JSON form Seal writes", id, ErrMalformed)
	}
	// One allocation: the ciphertext and the tag decoded back to back (GCM's input), opened in
	// place, and the IV after them (on the stack it would escape through cipher.AEAD).
	enc := base64.StdEncoding
	ctTag := enc.DecodedLen(len(ctB64)) + enc.DecodedLen(len(tagB64))
	buf := make([]byte, ctTag+IVSize+2)
	n, err1 := enc.Decode(buf, ctB64)
	t, err2 := enc.Decode(buf[n:ctTag], tagB64)
	ivBuf := buf[ctTag:]
	v, err3 := enc.Decode(ivBuf, ivB64)
	if err1 != nil || err2 != nil || err3 != nil || t != TagSize || v != IVSize {
		return nil, fmt.Errorf("key %x: %w: bad base64, IV or tag size", id, ErrMalformed)
	}
	sealed := buf[:n+t]
	if r == nil {
		return nil, fmt.Errorf("key %x: %w", id, ErrNoKey)
	}
	found := false
	for _, k := range r.keys {
		if !bytes.Equal(k.id[:], id) {
			continue
		}
		found = true
		pt, err := k.aead.Open(sealed[:0], ivBuf[:IVSize], sealed, nil)
		if err == nil {
			return pt, nil
		}
	}
	if found {
		return nil, fmt.Errorf("key %x: %w", id, ErrAuth)
	}
	return nil, fmt.Errorf("key %x: %w", id, ErrNoKey)
}
