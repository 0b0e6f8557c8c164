package queenimport

import (
	"bytes"
	"testing"

	"github.com/combmq/comb/seal"
)

// FuzzSealedForm: whatever jsonb text Queen's is_encrypted column holds, sealedForm never
// panics; what it accepts carries seal's header for the key, and a form seal itself made
// opens again to its plaintext.
func FuzzSealedForm(f *testing.F) {
	key, err := seal.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		f.Fatal(err)
	}
	ring := seal.NewKeyring(key)
	sealed, err := ring.Seal([]byte(`{"a":1}`))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sealed[6:])
	f.Add([]byte(`{"iv": "AAAA", "authTag": "BBBB", "encrypted": "CCCC"}`))
	f.Add([]byte(`{"encrypted": 1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		out, err := sealedForm(payload, key)
		if err != nil {
			return
		}
		if !bytes.Equal(out[:6], sealed[:6]) {
			t.Fatalf("header %x, want %x", out[:6], sealed[:6])
		}
		if bytes.Equal(payload, sealed[6:]) {
			plain, err := ring.Open(out)
			if err != nil || string(plain) != `{"a":1}` {
				t.Fatalf("seal's own form does not open again: %q %v", plain, err)
			}
		}
	})
}
