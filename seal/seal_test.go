package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	hexA = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	hexB = "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100"
)

func ring(t testing.TB, cur string, prev ...string) *Keyring {
	r, err := ParseKeyring(cur, prev)
	require.NoError(t, err)
	return r
}

// spec 9.2: AES-256-GCM, a fresh 16-byte IV per payload, a 16-byte tag, no additional data,
// Queen's stored form with standard base64. Checked with the standard library alone, from the
// stored bytes, as a Queen migration would read them.
func TestSealQueenForm(t *testing.T) {
	r := ring(t, hexA)
	plain := []byte(`{"card":"4111 1111 1111 1111","n":1}`)
	stored, err := r.Seal(plain)
	require.NoError(t, err)
	require.True(t, IsSealed(stored))
	require.Equal(t, []byte{0, 1}, stored[:2])
	id, ok := KeyID(stored)
	require.True(t, ok)
	require.Equal(t, r.CurrentID(), id)
	require.NotContains(t, string(stored), "4111", "no plaintext in the stored form")

	form, ok := QueenForm(stored)
	require.True(t, ok)
	var f map[string]string
	require.NoError(t, json.Unmarshal(form, &f))
	require.Len(t, f, 3, "exactly encrypted, iv, authTag: %s", form)
	ct, err := base64.StdEncoding.DecodeString(f["encrypted"])
	require.NoError(t, err)
	iv, err := base64.StdEncoding.DecodeString(f["iv"])
	require.NoError(t, err)
	tag, err := base64.StdEncoding.DecodeString(f["authTag"])
	require.NoError(t, err)
	require.Len(t, iv, 16)
	require.Len(t, tag, 16)
	require.Len(t, ct, len(plain), "GCM: ciphertext as long as the plaintext")

	raw, _ := hexDecode(hexA)
	block, err := aes.NewCipher(raw)
	require.NoError(t, err)
	gcm, err := cipher.NewGCMWithNonceSize(block, 16)
	require.NoError(t, err)
	got, err := gcm.Open(nil, iv, append(ct, tag...), nil)
	require.NoError(t, err)
	require.Equal(t, plain, got)

	again, err := r.Seal(plain)
	require.NoError(t, err)
	require.NotEqual(t, stored, again, "a fresh IV per payload")
}

func hexDecode(s string) ([]byte, error) {
	out := make([]byte, len(s)/2)
	for i := range out {
		var b byte
		for _, c := range s[2*i : 2*i+2] {
			b <<= 4
			switch {
			case c >= '0' && c <= '9':
				b |= byte(c - '0')
			default:
				b |= byte(c-'a') + 10
			}
		}
		out[i] = b
	}
	return out, nil
}

func TestOpenRoundTrip(t *testing.T) {
	r := ring(t, hexA)
	for _, p := range []string{"null", `"x"`, "0", "[]", `{"a":[1,2,{"b":null}]}`, strings.Repeat(`"é"`, 10000)} {
		stored, err := r.Seal([]byte(p))
		require.NoError(t, err)
		got, err := r.Open(stored)
		require.NoError(t, err)
		require.Equal(t, p, string(got))
	}
}

// issue 11, key rotation: a ring keeps previous keys for reading; new payloads use the current
// key; a payload whose key is gone is ErrNoKey, an altered one ErrAuth.
func TestOpenRotationAndFailures(t *testing.T) {
	old := ring(t, hexA)
	sealedOld, err := old.Seal([]byte(`{"v":1}`))
	require.NoError(t, err)

	rotated := ring(t, hexB, hexA)
	got, err := rotated.Open(sealedOld)
	require.NoError(t, err, "the previous key still opens what it sealed")
	require.Equal(t, `{"v":1}`, string(got))
	sealedNew, err := rotated.Seal([]byte(`{"v":2}`))
	require.NoError(t, err)
	id, _ := KeyID(sealedNew)
	require.Equal(t, ring(t, hexB).CurrentID(), id, "sealed with the current key")
	require.Equal(t, []string{ring(t, hexB).CurrentID(), old.CurrentID()}, rotated.IDs())

	_, err = ring(t, hexB).Open(sealedOld)
	require.ErrorIs(t, err, ErrNoKey)
	require.Contains(t, err.Error(), old.CurrentID())
	var none *Keyring
	_, err = none.Open(sealedOld)
	require.ErrorIs(t, err, ErrNoKey, "no key configured at all")
	_, err = none.Seal([]byte("1"))
	require.Error(t, err)

	altered := bytes.Clone(sealedOld)
	i := bytes.Index(altered, []byte(`"encrypted":"`)) + len(`"encrypted":"`)
	if altered[i] == 'A' {
		altered[i] = 'B'
	} else {
		altered[i] = 'A'
	}
	_, err = old.Open(altered)
	require.ErrorIs(t, err, ErrAuth)

	for name, b := range map[string][]byte{
		"empty":          {},
		"plain JSON":     []byte(`{"encrypted":"x"}`),
		"header only":    sealedOld[:headerSize],
		"short header":   sealedOld[:3],
		"bad version":    append([]byte{0, 9}, sealedOld[2:]...),
		"truncated JSON": sealedOld[:len(sealedOld)-2],
		"extra field":    append(bytes.Clone(sealedOld[:len(sealedOld)-1]), `,"x":1}`...),
		"trailing bytes": append(bytes.Clone(sealedOld), ` {}`...),
		"short IV":       append(bytes.Clone(sealedOld[:headerSize]), `{"encrypted":"","iv":"AAAA","authTag":"AAAAAAAAAAAAAAAAAAAAAA=="}`...),
	} {
		_, err := old.Open(b)
		require.ErrorIs(t, err, ErrMalformed, name)
	}
}

// The marker cannot be faked by a push: no JSON text starts with 0x00.
func TestIsSealedNeverJSON(t *testing.T) {
	for _, s := range []string{"null", " {}", "\t[]", `"\u0000"`, "0", "-1", "true"} {
		require.True(t, json.Valid([]byte(s)))
		require.False(t, IsSealed([]byte(s)), s)
	}
	require.False(t, json.Valid([]byte("\x00{}")), "a sealed payload is never valid JSON")
}

func TestParseKey(t *testing.T) {
	_, err := ParseKey(hexA[:63])
	require.ErrorContains(t, err, "want 64 hex characters")
	_, err = ParseKey(strings.Repeat("zz", 32))
	require.ErrorContains(t, err, "not hex")
	k, err := ParseKey(" " + strings.ToUpper(hexA) + "\n")
	require.NoError(t, err, "blanks around and upper-case hex are fine")
	require.Equal(t, ring(t, hexA).CurrentID(), k.ID())
	_, err = ParseKeyring(hexA, []string{"nope"})
	require.ErrorContains(t, err, "previous key 1")
}

// FuzzOpen: any stored bytes give the plaintext only when they were sealed with the ring's
// key; otherwise one of the three errors. Never a panic.
func FuzzOpen(f *testing.F) {
	r := ring(f, hexA)
	s, err := r.Seal([]byte(`{"a":1}`))
	require.NoError(f, err)
	f.Add(s)
	f.Add([]byte{0, 1, 1, 2, 3, 4})
	f.Add([]byte(`{"encrypted":"","iv":"","authTag":""}`))
	f.Add(append([]byte{0, 1, 0, 0, 0, 0}, `{"encrypted":"","iv":"AAAAAAAAAAAAAAAAAAAAAA==","authTag":"AAAAAAAAAAAAAAAAAAAAAA=="}`...))
	f.Fuzz(func(t *testing.T, stored []byte) {
		pt, err := r.Open(stored)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrNoKey) && !errors.Is(err, ErrAuth) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if !bytes.Equal(pt, []byte(`{"a":1}`)) {
			// GCM authenticated a payload we never sealed: impossible unless a forgery.
			t.Fatalf("opened %q to %q", stored, pt)
		}
	})
}

// FuzzSealRoundTrip: whatever the plaintext, Open(Seal(p)) == p.
func FuzzSealRoundTrip(f *testing.F) {
	r := ring(f, hexA, hexB)
	f.Add([]byte("null"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		s, err := r.Seal(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Open(s)
		if err != nil || !bytes.Equal(got, p) {
			t.Fatalf("round trip of %q: %q, %v", p, got, err)
		}
	})
}
