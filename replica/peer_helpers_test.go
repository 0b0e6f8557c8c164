package replica

// Test-only helpers: kept out of the production build (issue 26, deadcode).

// count is how many connections were refused so far.
func (r *refusalLog) count() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}
