package auth

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// spec 9.1: "The Bearer prefix is case-insensitive; a header with no prefix is taken whole as
// the token."
func TestTokenFromHeader(t *testing.T) {
	cases := []struct{ name, header, want string }{
		{"no header is no token", "", ""},
		{"Bearer prefix", "Bearer abc.def.ghi", "abc.def.ghi"},
		{"lower-case prefix", "bearer abc", "abc"},
		{"upper-case prefix", "BEARER abc", "abc"},
		{"extra spaces after the prefix", "Bearer    abc", "abc"},
		{"no prefix: the whole value", "abc.def.ghi", "abc.def.ghi"},
		{"another scheme is taken whole (then fails verification)", "Basic dXNlcjpwYXNz", "Basic dXNlcjpwYXNz"},
		{"prefix alone is taken whole", "Bearer ", "Bearer "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := TokenFromHeader([]byte(c.header))
			require.Equal(t, c.want, string(got))
			if c.header == "" {
				require.Nil(t, got)
			}
		})
	}
}

// spec 9.1: "exact match; an entry ending in / also matches as a prefix"; Queen never lets "/"
// match as a prefix (it would open every path).
func TestSkipPath(t *testing.T) {
	paths := SplitPaths(" /health, /metrics/prometheus,/metrics,/ ,, /assets/")
	require.Equal(t, []string{"/health", "/metrics/prometheus", "/metrics", "/", "/assets/"}, paths)
	cases := []struct {
		path string
		want bool
	}{
		{"/health", true},
		{"/metrics", true},
		{"/metrics/prometheus", true},
		{"/", true},
		{"/assets/app.js", true},
		{"/assets/", true},
		{"/healthz", false},
		{"/health/", false},
		{"/api/v1/push", false},
		{"/metrics/other", false},
		{"", false},
	}
	for _, c := range cases {
		require.Equal(t, c.want, skipPath(paths, []byte(c.path)), c.path)
	}
}
