package doctest

import (
	"fmt"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// loopbackPort finds the ports a block talks to or listens on by name.
var loopbackPort = regexp.MustCompile(`(?:localhost|127\.0\.0\.1|0\.0\.0\.0):([0-9]{2,5})\b`)

// rewritePorts replaces each port number of ports (as a whole number: 6632, not 66320) in the
// blocks' text, expectations and background URLs.
func rewritePorts(blocks []Block, ports map[string]string) []Block {
	if len(ports) == 0 {
		return blocks
	}
	from := make([]string, 0, len(ports))
	for p := range ports {
		from = append(from, regexp.QuoteMeta(p))
	}
	sort.Strings(from)
	re := regexp.MustCompile(`\b(?:` + strings.Join(from, "|") + `)\b`)
	sub := func(s string) string { return re.ReplaceAllStringFunc(s, func(p string) string { return ports[p] }) }
	out := make([]Block, len(blocks))
	for i, b := range blocks {
		b.Text, b.Wait = sub(b.Text), sub(b.Wait)
		b.Expect = expectations(b.Text, b.Line+1)
		out[i] = b
	}
	return out
}

// portsFree refuses a session whose blocks name a loopback port that something already
// listens on: the blocks would talk to that instead (issue 25 #1: a cluster recipe whose
// node could not bind, and a push that landed on another server).
func portsFree(blocks []Block, o Options) error {
	if !o.CheckPorts {
		return nil
	}
	seen := map[string]bool{}
	for _, b := range blocks {
		if b.Kind != Run && b.Kind != Background {
			continue
		}
		if b.Needs != "" && !hasEnv(o.Env, b.Needs) {
			continue
		}
		for _, m := range loopbackPort.FindAllStringSubmatch(b.Text+" "+b.Wait, -1) {
			p := m[1]
			if n, err := strconv.Atoi(p); err != nil || n > 65535 || seen[p] {
				continue
			}
			seen[p] = true
			l, err := net.Listen("tcp", "127.0.0.1:"+p)
			if err != nil {
				return fmt.Errorf("%s:%d: port %s, which this block uses, is taken (%v): stop what listens there and run again", o.File, b.Line, p, err)
			}
			l.Close()
		}
	}
	return nil
}
