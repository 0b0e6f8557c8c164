package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// override, when set by the linker (-X), is the version reported whatever
// the build information says.
var override string

// revision, commitTime and dirty are set by the Makefile's -ldflags from git
// ("true" or "false" for dirty). They stand in for the toolchain's VCS stamp
// where it has none: it is off under -buildvcs=false, and the go command
// stamps nothing in a git worktree.
var revision, commitTime, dirty string

// Info is what the binary knows about its build.
type Info struct {
	Module   string // main module version: a tag, a pseudo-version, or "(devel)"
	Revision string // VCS commit hash; "" when not stamped
	Time     string // VCS commit time, RFC 3339; "" when not stamped
	Modified bool   // the checkout had uncommitted changes
	Go       string // toolchain, e.g. go1.26.8
	Platform string // GOOS/GOARCH
}

// Read returns the running binary's build information.
func Read() Info {
	in := Info{Module: "(devel)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return in.withLinked().withOverride()
	}
	if v := bi.Main.Version; v != "" {
		in.Module = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in.withLinked().withOverride()
}

// withLinked fills the VCS fields from the linker's values when the
// toolchain stamped none.
func (in Info) withLinked() Info {
	if in.Revision == "" && revision != "" {
		in.Revision, in.Time, in.Modified = revision, commitTime, dirty == "true"
	}
	return in
}

func (in Info) withOverride() Info {
	if override != "" {
		in.Module = override
	}
	return in
}

// Short is the version alone, for GET /health: the module version when it
// names one, else "(devel)" followed by the revision's first 12 hex digits
// and "-dirty" when the checkout was modified, e.g.
// "(devel)+ea7187d1a2b3-dirty".
func (in Info) Short() string {
	if in.Module != "(devel)" || in.Revision == "" {
		return in.Module
	}
	s := in.Module + "+" + shortRev(in.Revision)
	if in.Modified {
		s += "-dirty"
	}
	return s
}

// String is the one line `comb version` prints: the version, then the
// revision, its time and the dirty flag when stamped, then the toolchain, e.g.
// "v0.0.0-20261201055511-ea7187d1a2b3+dirty (revision ea7187d1a2b3,
// 2026-12-01T05:55:11Z, modified) go1.26.8 linux/amd64".
func (in Info) String() string {
	var vcs []string
	if in.Revision != "" {
		vcs = append(vcs, "revision "+shortRev(in.Revision))
	}
	if in.Time != "" {
		vcs = append(vcs, in.Time)
	}
	if in.Modified {
		vcs = append(vcs, "modified")
	}
	s := in.Short()
	if len(vcs) > 0 {
		s += " (" + strings.Join(vcs, ", ") + ")"
	}
	return fmt.Sprintf("%s %s %s", s, in.Go, in.Platform)
}

func shortRev(r string) string {
	if len(r) > 12 {
		return r[:12]
	}
	return r
}
