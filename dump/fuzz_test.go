package dump

import "testing"

// FuzzParseTime: any --from/--to text parses or errors, never panics.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"2026-07-30T09:12:44Z", "2026-07-30T09:12:44.881042Z", "2026-07-30", "1785402764881042", "-1", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseTime(s)
	})
}
