package doctest

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// Kind says what the session does with a block.
type Kind int

const (
	// Shown blocks are not run: another fence language, or none.
	Shown Kind = iota
	// Run blocks are sourced by the session's shell, in order.
	Run
	// Background blocks run in their own process group until a Stop block (or the session's end).
	Background
	// Skip blocks are sh blocks that cannot run here; the session prints their Reason.
	Skip
)

// Block is one fenced code block of the file.
type Block struct {
	Line  int    // 1-based line of the opening fence
	Lang  string // the fence's info string, first word ("sh", "text", ...)
	Text  string // the block's lines, the fence's indentation removed, each ending in "\n"
	Kind  Kind
	Stop  bool   // stop the Background block before running this one
	Wait  string // Background: the URL that answers 200 once the block serves
	Needs string // Run: the environment variable the block needs ("" = none)
	// Reason is why a Skip block does not run, or what a Needs block needs.
	Reason string
	Expect []Expectation // the block's `# → TEXT` lines
}

const directivePrefix = "readme-test:"

var (
	fenceOpen  = regexp.MustCompile("^( *)(```+|~~~+)[ \t]*([^ \t`]*)")
	directive  = regexp.MustCompile(`^\s*<!--\s*` + regexp.QuoteMeta(directivePrefix) + `\s*(.*?)\s*-->\s*$`)
	runnable   = map[string]bool{"sh": true, "bash": true}
	envVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Parse splits a Markdown file into its fenced blocks, with the directives of doc.go applied.
// Errors: an unknown or malformed directive, a directive not followed by an sh block, an
// unclosed fence; each names its line.
func Parse(md []byte) ([]Block, error) {
	var (
		blocks  []Block
		pending []string // directives since the last non-directive line
		pendAt  int
		cur     *Block
		closer  string
		indent  int
		body    strings.Builder
	)
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if cur != nil {
			if t := strings.TrimSpace(line); strings.HasPrefix(t, closer) && strings.Trim(t, closer[:1]) == "" {
				cur.Text = body.String()
				cur.Expect = expectations(cur.Text, cur.Line+1)
				blocks = append(blocks, *cur)
				cur, body = nil, strings.Builder{}
				continue
			}
			// A line indented less than the fence keeps what it has (CommonMark strips at most
			// the fence's indentation).
			k := 0
			for k < indent && k < len(line) && line[k] == ' ' {
				k++
			}
			body.WriteString(line[k:])
			body.WriteByte('\n')
			continue
		}
		if m := directive.FindStringSubmatch(line); m != nil {
			if len(pending) == 0 {
				pendAt = n
			}
			pending = append(pending, m[1])
			continue
		}
		if m := fenceOpen.FindStringSubmatch(line); m != nil {
			b := Block{Line: n, Lang: m[3], Kind: Shown}
			if runnable[b.Lang] {
				b.Kind = Run
			}
			for _, d := range pending {
				if err := apply(&b, d); err != nil {
					return nil, fmt.Errorf("line %d: %w", pendAt, err)
				}
			}
			if len(pending) > 0 && !runnable[b.Lang] {
				return nil, fmt.Errorf("line %d: a %s directive before a %q block (only sh and bash blocks run)", pendAt, directivePrefix, b.Lang)
			}
			pending = nil
			cur, closer, indent = &b, m[2], len(m[1])
			continue
		}
		if len(pending) > 0 && strings.TrimSpace(line) != "" {
			return nil, fmt.Errorf("line %d: a %s directive not right before a fence", pendAt, directivePrefix)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading markdown: %w", err)
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: fence never closed", cur.Line)
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("line %d: a %s directive at the end of the file", pendAt, directivePrefix)
	}
	return blocks, nil
}

// apply sets what one directive says on b.
func apply(b *Block, d string) error {
	word, rest, _ := strings.Cut(d, " ")
	rest = strings.TrimSpace(rest)
	switch word {
	case "background":
		if rest == "" || strings.ContainsAny(rest, " \t") {
			return fmt.Errorf("background needs one URL to wait for, got %q", rest)
		}
		b.Kind, b.Wait = Background, rest
	case "stop":
		if rest != "" {
			return fmt.Errorf("stop takes nothing, got %q", rest)
		}
		b.Stop = true
	case "skip":
		if rest == "" {
			return fmt.Errorf("skip needs a reason")
		}
		b.Kind, b.Reason = Skip, rest
	case "needs":
		v, why, _ := strings.Cut(rest, " ")
		if !envVarName.MatchString(v) || strings.TrimSpace(why) == "" {
			return fmt.Errorf("needs takes an environment variable and a reason, got %q", rest)
		}
		b.Needs, b.Reason = v, strings.TrimSpace(why)
	default:
		return fmt.Errorf("unknown directive %q (background, stop, skip, needs)", word)
	}
	return nil
}
