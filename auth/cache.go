package auth

import (
	"sync"
	"time"
)

// Bounds of the verified-token cache.
const (
	// cacheMaxEntries bounds the cache; past it, expired entries go first, then arbitrary ones.
	cacheMaxEntries = 4096
	// cacheMaxTokenBytes: longer tokens are verified on every request instead of being kept
	// (a bound on the cache's memory: at most cacheMaxEntries × 4 KiB of keys).
	cacheMaxTokenBytes = 4 << 10
	// cacheMaxAge bounds how long a verified token is trusted without a new signature check,
	// also for tokens without exp, so a key removed from the JWK set or a changed secret stops
	// counting within this time.
	cacheMaxAge = 5 * time.Minute
)

// tokenCache maps a token string to the identity its verification gave, until the token's exp
// (plus the clock skew) or cacheMaxAge, whichever comes first (issue 11: auth must cost
// little on the hot path; a map lookup instead of a signature check). The key is the whole
// token, never a hash of it, so no other token can hit an entry.
type tokenCache struct {
	mu sync.RWMutex
	m  map[string]cachedIdentity
}

type cachedIdentity struct {
	id         Identity
	untilNanos int64 // unix ns after which the entry is no longer valid
}

func newTokenCache() *tokenCache {
	return &tokenCache{m: make(map[string]cachedIdentity)}
}

// get returns the identity of token when it was verified and is still valid at now. The
// lookup does not allocate (string(token) in a map index).
func (c *tokenCache) get(token []byte, now time.Time) (Identity, bool) {
	c.mu.RLock()
	e, ok := c.m[string(token)]
	c.mu.RUnlock()
	if !ok || now.UnixNano() >= e.untilNanos {
		return Identity{}, false
	}
	return e.id, true
}

// put keeps id for token until until (already capped by the caller).
func (c *tokenCache) put(token string, id Identity, until time.Time, now time.Time) {
	if len(token) > cacheMaxTokenBytes || !until.After(now) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= cacheMaxEntries {
		c.evictLocked(now)
	}
	c.m[token] = cachedIdentity{id: id, untilNanos: until.UnixNano()}
}

// evictLocked drops the expired entries and, if that frees less than a quarter, arbitrary
// ones (map order) down to three quarters of the bound.
func (c *tokenCache) evictLocked(now time.Time) {
	n := now.UnixNano()
	for k, e := range c.m {
		if n >= e.untilNanos {
			delete(c.m, k)
		}
	}
	for k := range c.m {
		if len(c.m) <= cacheMaxEntries*3/4 {
			break
		}
		delete(c.m, k)
	}
}

// clear forgets every entry (the JWK set changed).
func (c *tokenCache) clear() {
	c.mu.Lock()
	clear(c.m)
	c.mu.Unlock()
}
