package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"

	"github.com/combmq/comb/fsck"
)

func init() {
	register("fsck", "verify a stopped data directory offline; --repair fixes torn tails, indexes, cursors", runFsck)
}

func runFsck(args []string) int {
	fs := flag.NewFlagSet("comb fsck", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: comb fsck [flags] DATA-DIR

Verifies every segment checksum, offset order, index, the dedup index, the metadata journal,
the cursor snapshots, and that no cursor is past its partition's high-water mark.

exit codes: 0 clean; 1 repairable (or repaired by --repair); 2 damage that needs a person
(see docs/operations.md); 3 could not run (usage, directory held by a live server).

flags:`)
		fs.PrintDefaults()
	}
	repair := fs.Bool("repair", false, "truncate torn tails, rebuild indexes, clamp cursors, quarantine damaged sealed files (server must be stopped)")
	dryRun := fs.Bool("dry-run", false, "say what --repair would do, change nothing")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of the human summary")
	force := fs.Bool("force", false, "check read-only even though a live server holds the directory (never with --repair)")
	noProgress := fs.Bool("no-progress", false, "no progress bar even on a terminal")
	rest, err := parseFlagsWith(fs, args, os.Stderr, parseInterspersed)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return fsck.ExitError
	}
	if len(rest) != 1 {
		fmt.Fprintln(os.Stderr, "comb fsck: exactly one DATA-DIR is required")
		fs.Usage()
		return fsck.ExitError
	}
	if *repair && (*dryRun || *force) {
		fmt.Fprintln(os.Stderr, "comb fsck: --repair cannot be combined with --dry-run or --force")
		return fsck.ExitError
	}
	opts := fsck.Options{Mode: fsck.ModeCheck, Force: *force}
	switch {
	case *repair:
		opts.Mode = fsck.ModeRepair
	case *dryRun:
		opts.Mode = fsck.ModeDryRun
	}
	if !*noProgress && !*asJSON && onTerminal(os.Stderr) {
		opts.Progress = os.Stderr
	}
	rep, err := fsck.Run(rest[0], opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "comb fsck:", err)
		if errors.Is(err, fsck.ErrLocked) {
			fmt.Fprintln(os.Stderr, "comb fsck: stop the server first, or add --force for a read-only check")
		}
		return fsck.ExitError
	}
	if *asJSON {
		err = rep.WriteJSON(os.Stdout)
	} else {
		err = rep.WriteText(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "comb fsck:", err)
		return fsck.ExitError
	}
	return rep.ExitCode
}

// parseInterspersed parses flags that may come before or after the positional
// arguments (`comb fsck DIR --json` and `comb fsck --json DIR` both work) and returns
// the positional ones. A lone "--" ends flag parsing.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// onTerminal reports whether w is a terminal (progress bars only go to one).
func onTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
