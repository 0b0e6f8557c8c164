package main

import (
	"fmt"
	"io"
	"os"

	"github.com/combmq/comb/version"
)

func init() {
	register("version", "print the build's version, VCS revision and time (also `comb --version`)", runVersion)
}

// runVersion prints one line: the module version, the revision, its time and
// the dirty flag as the toolchain stamped them, then Go and the platform.
func runVersion(args []string) int {
	if len(args) > 0 {
		fmt.Fprintln(os.Stderr, "usage: comb version")
		if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
			return 0
		}
		return 2
	}
	writeVersion(os.Stdout)
	return 0
}

func writeVersion(w io.Writer) { fmt.Fprintln(w, "comb", version.Read()) }
