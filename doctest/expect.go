package doctest

import (
	"fmt"
	"regexp"
	"strings"
)

// Expectation is one `# → TEXT` line of a block: TEXT must appear in the block's output.
type Expectation struct {
	Line int    // 1-based line in the file
	Text string // TEXT as written
	re   *regexp.Regexp
}

var (
	expectLine = regexp.MustCompile(`^\s*#\s*→\s?(.*?)\s*$`)
	// placeholder is `<name>` in an expectation: one value, an id or a number, never spanning a
	// JSON delimiter or a space.
	placeholder = regexp.MustCompile(`<[A-Za-z_][A-Za-z0-9_ -]*>`)
)

// expectations collects a block's `# → TEXT` lines, in order; the block's text starts on line
// first of the file.
func expectations(text string, first int) []Expectation {
	var out []Expectation
	for i, line := range strings.Split(text, "\n") {
		m := expectLine.FindStringSubmatch(line)
		if m == nil || m[1] == "" {
			continue
		}
		out = append(out, Expectation{Line: first + i, Text: m[1], re: compileExpectation(m[1])})
	}
	return out
}

// compileExpectation turns TEXT into a pattern: literal text, `...` = any text on one line,
// `<name>` = one value.
func compileExpectation(text string) *regexp.Regexp {
	var b strings.Builder
	for i, part := range strings.Split(text, "...") {
		if i > 0 {
			b.WriteString(`[^\n]*?`)
		}
		last := 0
		for _, loc := range placeholder.FindAllStringIndex(part, -1) {
			b.WriteString(regexp.QuoteMeta(part[last:loc[0]]))
			b.WriteString(`[^"\s,{}\[\]]+`)
			last = loc[1]
		}
		b.WriteString(regexp.QuoteMeta(part[last:]))
	}
	return regexp.MustCompile(b.String())
}

// Check says which expectation output does not hold: each must match after the previous one's
// match, so their order is the block's. nil when all hold.
func Check(output string, exps []Expectation) error {
	pos := 0
	for _, e := range exps {
		loc := e.re.FindStringIndex(output[pos:])
		if loc == nil {
			return fmt.Errorf("line %d expects %q, which the output lacks (after byte %d)", e.Line, e.Text, pos)
		}
		pos += loc[1]
	}
	return nil
}
