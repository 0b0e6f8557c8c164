package certs

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func parseCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	b, _ := pem.Decode(data)
	require.NotNil(t, b, path)
	c, err := x509.ParseCertificate(b.Bytes)
	require.NoError(t, err)
	return c
}

// A first cluster: a CA and one certificate per node, each verifying against the CA for every
// host it names, as a TLS server and as a client; keys 0600.
func TestMakeIssuesNodeCertificatesOfOneCA(t *testing.T) {
	dir := t.TempDir() + "/certs"
	written, newCA, err := Make(dir, []Node{{ID: "n1", Hosts: []string{"127.0.0.1", "localhost"}}, {ID: "n2", Hosts: []string{"10.0.0.2"}}}, Options{})
	require.NoError(t, err)
	require.True(t, newCA)
	require.Equal(t, []string{CAFile(dir), CAKeyFile(dir), CertFile(dir, "n1"), KeyFile(dir, "n1"), CertFile(dir, "n2"), KeyFile(dir, "n2")}, written)
	for _, k := range []string{CAKeyFile(dir), KeyFile(dir, "n1"), KeyFile(dir, "n2")} {
		st, err := os.Stat(k)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), st.Mode().Perm(), k)
	}
	ca := parseCert(t, CAFile(dir))
	require.True(t, ca.IsCA)
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	n1 := parseCert(t, CertFile(dir, "n1"))
	require.Equal(t, "n1", n1.Subject.CommonName)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		for _, use := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			_, err := n1.Verify(x509.VerifyOptions{Roots: roots, DNSName: host, KeyUsages: []x509.ExtKeyUsage{use}})
			require.NoError(t, err, "%s %v", host, use)
		}
	}
	_, err = n1.Verify(x509.VerifyOptions{Roots: roots, DNSName: "10.0.0.2"})
	require.Error(t, err, "n1's certificate is not n2's host's")
	require.WithinDuration(t, time.Now().Add(DefaultNodeValidFor), n1.NotAfter, time.Minute)
	require.WithinDuration(t, time.Now().Add(DefaultCAValidFor), ca.NotAfter, time.Minute)
}

// A node added later is signed by the CA already in the directory (same cluster), whose files
// stay as they were.
func TestMakeReusesTheCA(t *testing.T) {
	dir := t.TempDir()
	_, _, err := Make(dir, []Node{{ID: "n1", Hosts: []string{"a"}}}, Options{})
	require.NoError(t, err)
	before, err := os.ReadFile(CAFile(dir))
	require.NoError(t, err)
	written, newCA, err := Make(dir, []Node{{ID: "n4", Hosts: []string{"b"}}}, Options{NodeValidFor: 48 * time.Hour})
	require.NoError(t, err)
	require.False(t, newCA)
	require.Equal(t, []string{CertFile(dir, "n4"), KeyFile(dir, "n4")}, written)
	after, err := os.ReadFile(CAFile(dir))
	require.NoError(t, err)
	require.Equal(t, before, after)
	roots := x509.NewCertPool()
	roots.AddCert(parseCert(t, CAFile(dir)))
	n4 := parseCert(t, CertFile(dir, "n4"))
	_, err = n4.Verify(x509.VerifyOptions{Roots: roots, DNSName: "b"})
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(48*time.Hour), n4.NotAfter, time.Minute)
}

func TestMakeRefuses(t *testing.T) {
	dir := t.TempDir()
	for name, nodes := range map[string][]Node{
		"a path as id":  {{ID: "../x", Hosts: []string{"a"}}},
		"the CA's name": {{ID: "ca", Hosts: []string{"a"}}},
		"no host":       {{ID: "n1"}},
	} {
		_, _, err := Make(dir, nodes, Options{})
		require.Error(t, err, name)
	}
	_, err := os.Stat(CertFile(dir, "n1"))
	require.ErrorIs(t, err, os.ErrNotExist)

	half := t.TempDir()
	_, _, err = Make(half, []Node{{ID: "n1", Hosts: []string{"a"}}}, Options{})
	require.NoError(t, err)
	require.NoError(t, os.Remove(CAKeyFile(half)))
	_, _, err = Make(half, []Node{{ID: "n2", Hosts: []string{"a"}}}, Options{})
	require.ErrorContains(t, err, "ca.key", "a CA without its key is not replaced by a new one")

	notCA := t.TempDir()
	_, _, err = Make(notCA, []Node{{ID: "n1", Hosts: []string{"a"}}}, Options{})
	require.NoError(t, err)
	leaf, err := os.ReadFile(CertFile(notCA, "n1"))
	require.NoError(t, err)
	key, err := os.ReadFile(KeyFile(notCA, "n1"))
	require.NoError(t, err)
	_, err = ParseCA(leaf, key)
	require.ErrorIs(t, err, ErrNotCA)
	caKey, err := os.ReadFile(CAKeyFile(notCA))
	require.NoError(t, err)
	caCert, err := os.ReadFile(CAFile(notCA))
	require.NoError(t, err)
	_, err = ParseCA(caCert, key)
	require.ErrorContains(t, err, "not the CA certificate's")
	_, err = ParseCA(caCert, caKey)
	require.NoError(t, err)
}
