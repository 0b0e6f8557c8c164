// Package docs holds no code: its test keeps docs/architecture.md's package table and arrow list
// true to `go list` (issue 26: "docs/architecture.md's package table and arrow list match go
// list").
package docs

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	module      = "github.com/combmq/comb/"
	arrowsStart = "<!-- arrows: every import of a comb package by another; docs/arrows_test.go checks it against go list -->"
)

// imports is every package of the module (build tags off, test files out) with the comb
// packages it imports, by path inside the module ("broker/wake").
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-tags", "peers,browser", "-f", `{{.ImportPath}}|{{join .Imports ","}}`, "./...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	require.NoError(t, err, "go list")
	got := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, "|")
		pkg = strings.TrimPrefix(pkg, module)
		if pkg == "docs" {
			continue
		}
		var own []string
		for _, d := range strings.Split(deps, ",") {
			if strings.HasPrefix(d, module) {
				own = append(own, strings.TrimPrefix(d, module))
			}
		}
		slices.Sort(own)
		got[pkg] = own
	}
	return got
}

// arrows reads the fenced block after arrowsStart: one line per package, `pkg → a, b` (or
// `pkg →` for a package that imports nothing of comb).
func arrows(t *testing.T, doc string) map[string][]string {
	t.Helper()
	f, err := os.Open(doc)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	found, in := false, false
	stated := map[string][]string{}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == arrowsStart:
			found = true
		case found && !in && strings.HasPrefix(line, "```"):
			in = true
		case in && strings.HasPrefix(line, "```"):
			return stated
		case in:
			pkg, deps, ok := strings.Cut(line, "→")
			require.True(t, ok, "arrow line without →: %q", line)
			pkg = strings.TrimSpace(pkg)
			var list []string
			for _, d := range strings.Split(deps, ",") {
				if d = strings.TrimSpace(d); d != "" {
					list = append(list, d)
				}
			}
			stated[pkg] = list
		}
	}
	require.NoError(t, sc.Err())
	t.Fatalf("%s: no arrow block after %q", doc, arrowsStart)
	return nil
}

func block(m map[string][]string) string {
	var b strings.Builder
	for _, pkg := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, "%s → %s\n", pkg, strings.Join(m[pkg], ", "))
	}
	return b.String()
}

// The arrow list states exactly the imports go list reports: an import the list lacks (a new
// arrow nobody wrote down) and a listed arrow no import backs (a stale one) both fail, with
// the block to paste.
func TestArchitectureArrowsMatchGoList(t *testing.T) {
	got := imports(t)
	stated := arrows(t, "architecture.md")
	if g, s := block(got), block(stated); g != s {
		t.Errorf("docs/architecture.md's arrow block differs from go list; the imports are:\n```text\n%s```", g)
	}
}

// Every package has a row in the package table (its path in backquotes, with or without the
// trailing slash, in the table's first column) or is named in its parent's row.
func TestArchitecturePackageTableNamesEveryPackage(t *testing.T) {
	data, err := os.ReadFile("architecture.md")
	require.NoError(t, err)
	var table strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "| `") {
			table.WriteString(line + "\n")
		}
	}
	for pkg := range imports(t) {
		if !strings.Contains(table.String(), "`"+pkg+"/`") && !strings.Contains(table.String(), "`"+pkg+"`") {
			t.Errorf("docs/architecture.md's package table does not name %s", pkg)
		}
	}
}
