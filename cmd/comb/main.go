// Command comb is the comb message broker's single binary: `comb <verb> [flags]`.
//
// Each verb lives in its own file and registers itself from init() with register, so adding a
// verb never touches this file.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
)

type verb struct {
	name, summary string
	run           func(args []string) int
}

var verbs = map[string]verb{}

// register adds a verb. run receives the arguments after the verb name and returns the process
// exit code. Called from init() of each verb's file; a duplicate name is a programming error.
func register(name, summary string, run func(args []string) int) {
	if _, dup := verbs[name]; dup {
		panic("comb: verb registered twice: " + name)
	}
	verbs[name] = verb{name: name, summary: summary, run: run}
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs the verb named by args[0]. `comb help` (or -h/--help) prints the usage and
// exits 0; no verb or an unknown one prints it to stderr and exits 2.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "--version", "-version":
		writeVersion(stdout)
		return 0
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			if v, ok := verbs[args[1]]; ok {
				return v.run([]string{"-h"})
			}
		}
		usage(stdout)
		return 0
	}
	v, ok := verbs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "comb: unknown verb %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return v.run(args[1:])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: comb <verb> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "verbs:")
	names := make([]string, 0, len(verbs))
	for n := range verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, verbs[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "`comb help <verb>` or `comb <verb> -h` lists a verb's flags.")
}
