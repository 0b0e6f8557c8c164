package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/certs"
	"github.com/combmq/comb/replica"
)

func TestParseCertNodes(t *testing.T) {
	for _, c := range []struct {
		nodes, hosts string
		want         []certs.Node
	}{
		{"n1,n2", "127.0.0.1,localhost", []certs.Node{{ID: "n1", Hosts: []string{"127.0.0.1", "localhost"}}, {ID: "n2", Hosts: []string{"127.0.0.1", "localhost"}}}},
		{"n1=10.0.0.1,n2=node2.example", "", []certs.Node{{ID: "n1", Hosts: []string{"10.0.0.1"}}, {ID: "n2", Hosts: []string{"node2.example"}}}},
		// an --initial-cluster value: the port goes
		{"n1=10.0.0.1:7001,n2=[::1]:7002", "lb.example", []certs.Node{{ID: "n1", Hosts: []string{"10.0.0.1", "lb.example"}}, {ID: "n2", Hosts: []string{"::1", "lb.example"}}}},
	} {
		got, err := parseCertNodes(c.nodes, c.hosts)
		require.NoError(t, err, c.nodes)
		require.Equal(t, c.want, got, c.nodes)
	}
	for _, bad := range []string{"n1", "n1,n1=a", "=a", ""} {
		_, err := parseCertNodes(bad, "")
		require.Error(t, err, bad)
	}
}

// `comb certs` writes what a node's three --peer-* flags load (replica.LoadPeerTLS), and a
// second run signs with the same CA.
func TestCertsVerbMakesWhatServeLoads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	var out, errOut bytes.Buffer
	require.Equal(t, 0, runCerts([]string{"--dir", dir, "--nodes", "n1,n2", "--hosts", "127.0.0.1"}, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "made a new cluster CA")
	require.Contains(t, out.String(), "n2 (127.0.0.1): --peer-cert-file "+filepath.Join(dir, "n2.crt"))
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	require.NoError(t, err)
	out.Reset()
	require.Equal(t, 0, runCerts([]string{"--dir", dir, "--nodes", "n3=10.0.0.3"}, &out, io.Discard))
	require.Contains(t, out.String(), "signed with the CA already in")
	again, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	require.NoError(t, err)
	require.Equal(t, ca, again)
	for _, id := range []string{"n1", "n2", "n3"} {
		_, err := replica.LoadPeerTLS(filepath.Join(dir, id+".crt"), filepath.Join(dir, id+".key"), filepath.Join(dir, "ca.crt"))
		require.NoError(t, err, id)
	}
	other := t.TempDir()
	require.Equal(t, 0, runCerts([]string{"--dir", other, "--nodes", "x", "--hosts", "127.0.0.1"}, io.Discard, io.Discard))
	_, err = replica.LoadPeerTLS(filepath.Join(other, "x.crt"), filepath.Join(other, "x.key"), filepath.Join(dir, "ca.crt"))
	require.ErrorContains(t, err, "--peer-trusted-ca-file", "a certificate of another CA is refused at start-up")

	require.Equal(t, 2, runCerts([]string{"--dir", dir}, io.Discard, io.Discard), "--nodes is required")
}
