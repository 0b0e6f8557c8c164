package version

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFormats(t *testing.T) {
	const rev = "ea7187d1a2b3c4d5e6f708192a3b4c5d6e7f8091"
	cases := []struct {
		name        string
		in          Info
		short, line string
	}{
		{"a go build in a dirty checkout: the pseudo-version says it all",
			Info{Module: "v0.0.0-20261201055511-ea7187d1a2b3+dirty", Revision: rev, Time: "2026-12-01T05:55:11Z", Modified: true, Go: "go1.26.8", Platform: "linux/amd64"},
			"v0.0.0-20261201055511-ea7187d1a2b3+dirty",
			"v0.0.0-20261201055511-ea7187d1a2b3+dirty (revision ea7187d1a2b3, 2026-12-01T05:55:11Z, modified) go1.26.8 linux/amd64"},
		{"a tagged install",
			Info{Module: "v1.2.3", Go: "go1.26.8", Platform: "linux/arm64"},
			"v1.2.3", "v1.2.3 go1.26.8 linux/arm64"},
		{"devel with a revision keeps the revision",
			Info{Module: "(devel)", Revision: rev, Modified: true, Go: "go1.26.8", Platform: "linux/amd64"},
			"(devel)+ea7187d1a2b3-dirty", "(devel)+ea7187d1a2b3-dirty (revision ea7187d1a2b3, modified) go1.26.8 linux/amd64"},
		{"nothing stamped",
			Info{Module: "(devel)", Go: "go1.26.8", Platform: "linux/amd64"},
			"(devel)", "(devel) go1.26.8 linux/amd64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.short, c.in.Short())
			assert.Equal(t, c.line, c.in.String())
		})
	}
}

func TestOverrideWins(t *testing.T) {
	defer func(o string) { override = o }(override)
	override = "1.2.3"
	assert.Equal(t, "1.2.3", Read().Module)
}

func TestLinkedVCSFillsAMissingStamp(t *testing.T) {
	defer func(r, c, d string) { revision, commitTime, dirty = r, c, d }(revision, commitTime, dirty)
	revision, commitTime, dirty = "ea7187d1a2b3c4d5", "2026-12-01T05:55:11Z", "true"
	in := Info{Module: "(devel)"}.withLinked()
	assert.Equal(t, Info{Module: "(devel)", Revision: "ea7187d1a2b3c4d5", Time: "2026-12-01T05:55:11Z", Modified: true}, in)
	stamped := Info{Module: "v0.0.0-x", Revision: "0123"}.withLinked()
	assert.Equal(t, "0123", stamped.Revision, "the toolchain's stamp wins")
}

func TestReadNeverSaysDev(t *testing.T) {
	in := Read()
	assert.NotEmpty(t, in.Module)
	assert.NotEqual(t, "dev", in.Short())
	assert.NotEmpty(t, in.Go)
}
