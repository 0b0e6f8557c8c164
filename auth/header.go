package auth

// MaxTokenBytes bounds a token: longer ones are refused before any parsing (real tokens are
// well under 4 KiB; the HTTP layer's header buffer is 16 KiB).
const MaxTokenBytes = 16 << 10

// TokenFromHeader returns the token of an Authorization header value (spec 9.1): what follows
// a case-insensitive "Bearer " prefix, or the whole value when there is no such prefix (some
// clients send the bare token). The result aliases h; nil means no header.
func TokenFromHeader(h []byte) []byte {
	if len(h) == 0 {
		return nil
	}
	const prefix = "bearer "
	if len(h) > len(prefix) && equalFoldASCII(h[:len(prefix)], prefix) {
		h = h[len(prefix):]
		for len(h) > 0 && h[0] == ' ' {
			h = h[1:]
		}
	}
	return h
}

// equalFoldASCII compares b with the lower-case ASCII string lower, ignoring ASCII case.
func equalFoldASCII(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// skipPath reports whether path is public by JWT_SKIP_PATHS: an exact match, or a prefix match
// for an entry longer than "/" that ends in "/" ("/" itself matches only "/", else it would
// open every path).
func skipPath(paths []string, path []byte) bool {
	for _, p := range paths {
		if string(path) == p {
			return true
		}
		if len(p) > 1 && p[len(p)-1] == '/' && len(path) >= len(p) && string(path[:len(p)]) == p {
			return true
		}
	}
	return false
}
