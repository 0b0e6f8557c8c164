package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/combmq/comb/names"
)

// A mistyped flag gets a short answer: what is wrong, what a valid value looks like, and where
// the full list is (issue 25, "Errors that hide the mistake"), not the flag package's "parse
// error" followed by every flag of the verb. `-h` still prints the full list.

// errFlagReported is returned once the short error has been written: the caller exits 2.
var errFlagReported = errors.New("bad flag (reported)")

// parseFlags parses args into fs like fs.Parse, with parse errors written to stderr as
// flagProblem's short form. It returns nil, flag.ErrHelp (the usage was printed in full to
// stderr) or errFlagReported.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	_, err := parseFlagsWith(fs, args, stderr, func(fs *flag.FlagSet, args []string) ([]string, error) {
		return nil, fs.Parse(args)
	})
	return err
}

// parseFlagsWith runs parse (fs.Parse, or parseInterspersed) with the flag package's own
// printing silenced, then prints the full usage for -h or the short error for anything else.
func parseFlagsWith(fs *flag.FlagSet, args []string, stderr io.Writer, parse func(*flag.FlagSet, []string) ([]string, error)) ([]string, error) {
	usage := fs.Usage
	out := fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	rest, err := parse(fs, args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case err == nil:
		return rest, nil
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stderr)
		if fs.Usage != nil {
			fs.Usage()
		} else {
			fmt.Fprintf(stderr, "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
		}
		fs.SetOutput(out)
		return nil, err
	}
	reportFlag(stderr, fs, explainParseError(fs, err))
	return nil, errFlagReported
}

// reportFlag writes problem and the pointer to the verb's full flag list: two lines.
func reportFlag(w io.Writer, fs *flag.FlagSet, problem string) {
	fmt.Fprintf(w, "%s: %s\n", fs.Name(), problem)
	fmt.Fprintf(w, "see %s -h\n", fs.Name())
}

// The flag package's parse errors (Go 1.26, flag.FlagSet.failf); anything else is shown as is.
var (
	reInvalidValue = regexp.MustCompile(`^invalid (?:boolean )?value "((?:[^"\\]|\\.)*)" for (?:flag )?-([^:]+): (.*)$`)
	reNoArgument   = regexp.MustCompile(`^flag needs an argument: -(.+)$`)
	reUndefined    = regexp.MustCompile(`^flag provided but not defined: -(.+)$`)
)

// explainParseError turns a flag package error into one line naming the flag, the value, and
// what a valid one looks like.
func explainParseError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if m := reInvalidValue.FindStringSubmatch(msg); m != nil {
		return badValue(fs, "--"+m[2], m[2], m[1], m[3])
	}
	if m := reNoArgument.FindStringSubmatch(msg); m != nil {
		if f := fs.Lookup(m[1]); f != nil && validForm(f) != "" {
			return fmt.Sprintf("--%s needs a value: %s", m[1], validForm(f))
		}
		return fmt.Sprintf("--%s needs a value", m[1])
	}
	if m := reUndefined.FindStringSubmatch(msg); m != nil {
		if near := nearestFlag(fs, m[1]); near != "" {
			return fmt.Sprintf("unknown flag -%s (did you mean --%s?)", m[1], near)
		}
		return fmt.Sprintf("unknown flag -%s", m[1])
	}
	return msg
}

// badValue is the line for value refused by flag name; where says how it was given (--name,
// or ENV="v" (--name)). reason is the flag Value's own error, which for comb's own types
// already says what is valid; the flag package's bare "parse error" is replaced by the type's
// valid form.
func badValue(fs *flag.FlagSet, where, name, value, reason string) string {
	f := fs.Lookup(name)
	if f == nil {
		return fmt.Sprintf("%s %q: %s", where, value, reason)
	}
	if reason == "parse error" || reason == "value out of range" {
		if reason = validForm(f); reason == "" {
			reason = "not a valid value; the flag's description says what is"
		}
		if strings.HasPrefix(where, "--") {
			return fmt.Sprintf("%s %q: %s", where, value, reason)
		}
		return fmt.Sprintf("%s: %s", where, reason)
	}
	// comb's own flag types quote the value first; do not say it twice.
	reason = strings.TrimPrefix(reason, fmt.Sprintf("%q: ", value))
	reason = strings.TrimPrefix(reason, fmt.Sprintf("size %q: ", value))
	if strings.HasPrefix(where, "--") {
		return fmt.Sprintf("%s %q: %s", where, value, reason)
	}
	return fmt.Sprintf("%s: %s", where, reason)
}

// validForm says what a valid value of f looks like, from its type; "" for a type that has
// no one form (a string).
func validForm(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		return "want a duration with a unit, like 500ms, 30s, 5m or 1h"
	case bool:
		return "want true or false"
	case int, int64:
		return "want a whole number, like " + exampleInt(f)
	case uint, uint64:
		return "want a whole number >= 0, like " + exampleInt(f)
	case float64:
		return "want a number, like 1.5"
	}
	return ""
}

func exampleInt(f *flag.Flag) string {
	if f.DefValue != "" && f.DefValue != "0" {
		return f.DefValue
	}
	return "100"
}

// nearestFlag is the defined flag name closest to a mistyped one (edit distance at most 2), or
// "".
func nearestFlag(fs *flag.FlagSet, name string) string {
	best, bestD := "", 3
	fs.VisitAll(func(f *flag.Flag) {
		if d := names.Distance(strings.ToLower(name), f.Name); d < bestD {
			best, bestD = f.Name, d
		}
	})
	return best
}

// envError is a refused environment value (applyEnv): the variable, its flag and the reason.
type envError struct {
	env, flag, value string
	err              error
}

func (e *envError) Error() string { return fmt.Sprintf("%s=%q: %v", e.env, e.value, e.err) }
func (e *envError) Unwrap() error { return e.err }

// explainEnvError is the line for an environment value that its flag refused.
func explainEnvError(fs *flag.FlagSet, e *envError) string {
	return badValue(fs, fmt.Sprintf("%s=%q (--%s)", e.env, e.value, e.flag), e.flag, e.value, e.err.Error())
}

// checkListenAddr validates a host:port to listen on before anything is opened: the syntax, the
// port, the host's resolution, and that the port is free (a probe listener, closed at once).
// The name is that of the flag, for the message.
func checkListenAddr(name, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--%s %q: want host:port, like 127.0.0.1:6632 or :6632", name, addr)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("--%s %q: port %q is not a number from 0 to 65535", name, addr, port)
	}
	if host != "" && net.ParseIP(host) == nil {
		if _, err := net.LookupHost(host); err != nil {
			return fmt.Errorf("--%s %q: host %q does not resolve; want an IP address or a known host name, like 127.0.0.1", name, addr, host)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--%s %q: cannot listen there: %v (another comb, or `make run`, may hold it)", name, addr, errors.Unwrap(err))
	}
	return ln.Close()
}

// valueRule is a post-parse check of one flag: ok reports whether v is allowed, want says what
// is.
type valueRule struct {
	name string
	ok   bool
	got  string
	want string
}

// firstBadValue returns the first rule that fails as its one-line problem, or "".
func firstBadValue(rules []valueRule) string {
	for _, r := range rules {
		if !r.ok {
			return fmt.Sprintf("--%s %s: %s", r.name, r.got, r.want)
		}
	}
	return ""
}
