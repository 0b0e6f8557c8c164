package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/combmq/comb/certs"
)

func init() {
	register("certs", "make a cluster CA and the nodes' peer certificates (--peer-cert-file and friends)", func(args []string) int {
		return runCerts(args, os.Stdout, os.Stderr)
	})
}

// runCerts is `comb certs --dir DIR --nodes n1,n2,n3 [--hosts h1,h2]`: package certs writes
// the CA (unless DIR has one) and a certificate and key per node (issue 22, docs/operations.md
// "Peer certificates").
func runCerts(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("comb certs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: comb certs --dir DIR --nodes ID[=HOST[:PORT]],... [--hosts HOST,...]

Makes the peer certificates of a comb cluster: DIR/ca.crt and DIR/ca.key (a new CA, unless DIR
holds one: then it signs, so a node added later is of the same cluster), and DIR/ID.crt,
DIR/ID.key for each node (replaced if there: a new key). Every node gets
  --peer-cert-file DIR/ID.crt --peer-key-file DIR/ID.key --peer-trusted-ca-file DIR/ca.crt
A certificate names the hosts other nodes dial it at: the node's own (ID=HOST, or an
--initial-cluster item ID=HOST:PORT) and every --hosts one. Keep ca.key off the nodes.

flags:`)
		fs.PrintDefaults()
	}
	dir := fs.String("dir", "", "directory to write the files in (created 0700)")
	nodesFlag := fs.String("nodes", "", "the node ids, each with its host if it has one of its own: n1,n2,n3 or n1=10.0.0.1,n2=10.0.0.2 or an --initial-cluster value")
	hostsFlag := fs.String("hosts", "", "hosts every node's certificate names (IP addresses or DNS names), e.g. 127.0.0.1,localhost")
	days := fs.Int("days", int(certs.DefaultNodeValidFor/(24*time.Hour)), "how long a node certificate is valid, days")
	caDays := fs.Int("ca-days", int(certs.DefaultCAValidFor/(24*time.Hour)), "how long a new CA is valid, days")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || *dir == "" || *nodesFlag == "" || *days < 1 || *caDays < 1 {
		fmt.Fprintln(stderr, "comb certs: --dir and --nodes are required (and --days, --ca-days at least 1)")
		fs.Usage()
		return 2
	}
	nodes, err := parseCertNodes(*nodesFlag, *hostsFlag)
	if err != nil {
		fmt.Fprintln(stderr, "comb certs:", err)
		return 2
	}
	_, newCA, err := certs.Make(*dir, nodes, certs.Options{
		CAValidFor: time.Duration(*caDays) * 24 * time.Hour, NodeValidFor: time.Duration(*days) * 24 * time.Hour})
	if err != nil {
		fmt.Fprintln(stderr, "comb certs:", err)
		return 1
	}
	if newCA {
		fmt.Fprintf(stdout, "made a new cluster CA: %s (keep %s off the nodes)\n", certs.CAFile(*dir), certs.CAKeyFile(*dir))
	} else {
		fmt.Fprintf(stdout, "signed with the CA already in %s\n", *dir)
	}
	for _, n := range nodes {
		fmt.Fprintf(stdout, "%s (%s): --peer-cert-file %s --peer-key-file %s --peer-trusted-ca-file %s\n",
			n.ID, strings.Join(n.Hosts, ","), certs.CertFile(*dir, n.ID), certs.KeyFile(*dir, n.ID), certs.CAFile(*dir))
	}
	return 0
}

// parseCertNodes reads --nodes (ID, ID=HOST or ID=HOST:PORT items) and adds --hosts to each.
//
// Errors: an empty id, a node named twice, a node with no host at all.
func parseCertNodes(nodesFlag, hostsFlag string) ([]certs.Node, error) {
	var common []string
	for _, h := range strings.Split(hostsFlag, ",") {
		if h = strings.TrimSpace(h); h != "" {
			common = append(common, h)
		}
	}
	var nodes []certs.Node
	seen := map[string]bool{}
	for _, item := range strings.Split(nodesFlag, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		id, host, _ := strings.Cut(item, "=")
		if id == "" {
			return nil, fmt.Errorf("--nodes item %q: want ID, ID=HOST or ID=HOST:PORT", item)
		}
		if seen[id] {
			return nil, fmt.Errorf("--nodes names %q twice", id)
		}
		seen[id] = true
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		var hosts []string
		if host != "" {
			hosts = append(hosts, host)
		}
		for _, h := range common {
			if h != host {
				hosts = append(hosts, h)
			}
		}
		if len(hosts) == 0 {
			return nil, fmt.Errorf("node %s: no host for its certificate (ID=HOST in --nodes, or --hosts)", id)
		}
		nodes = append(nodes, certs.Node{ID: id, Hosts: hosts})
	}
	if len(nodes) == 0 {
		return nil, errors.New("--nodes names no node")
	}
	return nodes, nil
}
