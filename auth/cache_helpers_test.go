package auth

// Test-only helpers: kept out of the production build (issue 26, deadcode).

// len returns the number of entries (only tests call it).
func (c *tokenCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.m)
}
