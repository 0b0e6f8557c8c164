// Package version says which build of comb is running, from what the Go
// toolchain stamped into the binary (runtime/debug.ReadBuildInfo): the main
// module's version, and the VCS revision, commit time and dirty flag of the
// checkout it was built from. `comb version`, `comb --version` and the
// `version` field of GET /health all read it here, so they agree.
//
// A `go build` in a git checkout stamps a pseudo-version such as
// v0.0.0-20261201055511-ea7187d1a2b3+dirty; `go install …@v1.2.3` stamps the
// tag. A build without VCS information (-buildvcs=false, a source tarball,
// a test binary) reports "(devel)" with whatever it does know; `make build`
// and `make run` also hand the git revision, commit time and dirty flag to
// the linker, which fills in where the toolchain stamped nothing (a git
// worktree, GOFLAGS=-buildvcs=false). Packagers may
// set the version outright with
// -ldflags "-X github.com/combmq/comb/version.override=1.2.3".
//
// It must not know about HTTP or the CLI: it only formats build information.
package version
