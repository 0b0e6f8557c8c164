package auth

import (
	"context"
	"crypto"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/rs/zerolog"
)

// Bounds of the JWKS cache.
const (
	// jwksMinGap is the least time between two fetches caused by unknown key ids, so that a
	// stream of tokens with made-up kids costs one fetch per gap, not one per request.
	jwksMinGap = 10 * time.Second
	// maxJWKSBytes bounds the JWK set document.
	maxJWKSBytes = 1 << 20
)

// jwksCache holds the keys of JWT_JWKS_URL by kid (spec 9.1: "cached, refreshed hourly and on
// an unknown kid"). It is fetched by New; a set older than the refresh interval is fetched
// again in the background while the old keys keep serving; a kid it does not hold makes the
// caller fetch at once, unless a fetch started less than jwksMinGap ago. Concurrent callers
// share one fetch.
type jwksCache struct {
	url     string
	client  *http.Client
	refresh time.Duration
	timeout time.Duration
	log     zerolog.Logger
	now     func() time.Time
	// onChange is called after a fetch that changed the set (the token cache is cleared, so a
	// key removed from the set stops verifying cached tokens).
	onChange func()

	mu        sync.Mutex
	keys      map[string]crypto.PublicKey
	fetched   time.Time     // last successful fetch; zero: never
	attempted time.Time     // last fetch started
	inflight  chan struct{} // closed when the running fetch ends; nil when none runs
	lastErr   error
}

// key returns the key for kid ("" when the token names none: the only key of the set that fits
// fam). Errors: unknownKID (401), ErrJWKSUnavailable (500) when the set was never fetched.
func (c *jwksCache) key(kid, fam string) (crypto.PublicKey, *Error) {
	c.mu.Lock()
	if !c.fetched.IsZero() && c.now().Sub(c.fetched) > c.refresh && c.inflight == nil {
		c.startFetchLocked(false) // stale: refresh in the background, serve the old keys
	}
	k, ok := c.lookupLocked(kid, fam)
	if ok {
		c.mu.Unlock()
		return k, nil
	}
	// Unknown kid (or no set yet): fetch now, at most once per jwksMinGap.
	wait := c.inflight
	if wait == nil && c.now().Sub(c.attempted) >= jwksMinGap {
		wait = c.startFetchLocked(true)
	}
	c.mu.Unlock()
	if wait != nil {
		<-wait
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.lookupLocked(kid, fam); ok {
		return k, nil
	}
	if c.fetched.IsZero() {
		return nil, ErrJWKSUnavailable
	}
	return nil, unknownKID(kid)
}

// lookupLocked finds kid; without a kid, the set's only key of family fam.
func (c *jwksCache) lookupLocked(kid, fam string) (crypto.PublicKey, bool) {
	if kid != "" {
		k, ok := c.keys[kid]
		return k, ok && fits(k, fam)
	}
	var found crypto.PublicKey
	n := 0
	for _, k := range c.keys {
		if fits(k, fam) {
			found = k
			n++
		}
	}
	return found, n == 1
}

// startFetchLocked starts a fetch and returns the channel closed when it ends. The caller
// holds c.mu.
func (c *jwksCache) startFetchLocked(unknownKid bool) chan struct{} {
	done := make(chan struct{})
	c.inflight = done
	c.attempted = c.now()
	go func() {
		keys, err := c.fetch()
		c.mu.Lock()
		changed := false
		if err != nil {
			c.lastErr = err
			c.log.Warn().Err(err).Str("jwks_url", c.url).Bool("unknown_kid", unknownKid).
				Msg("cannot fetch the JWK set; the keys fetched before keep serving")
		} else {
			changed = !sameKeys(c.keys, keys)
			c.keys, c.fetched, c.lastErr = keys, c.now(), nil
		}
		c.inflight = nil
		c.mu.Unlock()
		close(done)
		if changed && c.onChange != nil {
			c.onChange()
		}
	}()
	return done
}

// fetch GETs the JWK set and parses every key comb can use (RSA and Ed25519 signature keys);
// others are skipped, as Queen does.
func (c *jwksCache) fetch() (map[string]crypto.PublicKey, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, fmt.Errorf("jwks %s: %w", c.url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jwks %s: HTTP %d", c.url, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("jwks %s: %w", c.url, err)
	}
	if len(body) > maxJWKSBytes {
		return nil, fmt.Errorf("jwks %s: document larger than %d bytes", c.url, maxJWKSBytes)
	}
	return parseJWKS(body, c.log)
}

// parseJWKS reads {"keys":[...]} and keeps the RSA and Ed25519 keys whose use is not "enc".
func parseJWKS(body []byte, log zerolog.Logger) (map[string]crypto.PublicKey, error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	if set.Keys == nil {
		return nil, fmt.Errorf("jwks: no \"keys\" array")
	}
	keys := make(map[string]crypto.PublicKey, len(set.Keys))
	for i, raw := range set.Keys {
		jwk, err := jwkset.NewJWKFromRawJSON(raw, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
		if err != nil {
			log.Debug().Err(err).Int("index", i).Msg("jwks: skipping a key comb cannot use")
			continue
		}
		m := jwk.Marshal()
		if m.USE == jwkset.UseEnc {
			continue
		}
		k := jwk.Key()
		if pk, ok := k.(interface{ Public() crypto.PublicKey }); ok {
			k = pk.Public() // a set that leaks private keys still verifies with the public half
		}
		if !fits(k, RS256) && !fits(k, EdDSA) {
			continue
		}
		keys[m.KID] = k
	}
	return keys, nil
}

// sameKeys reports whether two sets hold the same kids with equal keys.
func sameKeys(a, b map[string]crypto.PublicKey) bool {
	if len(a) != len(b) {
		return false
	}
	for kid, ka := range a {
		kb, ok := b[kid]
		if !ok {
			return false
		}
		eq, ok := ka.(interface{ Equal(crypto.PublicKey) bool })
		if !ok || !eq.Equal(kb) {
			return false
		}
	}
	return true
}
