package httpapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

// writeSelfSigned writes a certificate for 127.0.0.1 with the given serial and its key.
func writeSelfSigned(t *testing.T, dir string, serial int64) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err = x509.ParseCertificate(der)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600))
	return certFile, keyFile, cert
}

func startTLS(t *testing.T, b Backend, cert *Certificate) string {
	return startTLSWith(t, b, Config{TLS: cert.TLSConfig()})
}

// startTLSWith serves cfg (its TLS set) on a loopback port until the test ends.
func startTLSWith(t *testing.T, b Backend, cfg Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cfg.Logger, cfg.DefaultPopTimeout = zerolog.Nop(), 30*time.Second
	srv := New(b, reportsOf(t, b), cfg)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	return ln.Addr().String()
}

// issue 11: HTTPS on the same listener with --tls-cert/--tls-key; a reload (SIGHUP) swaps the
// certificate for new connections, and a failed reload keeps the one in use.
func TestTLSServeAndReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, c1 := writeSelfSigned(t, dir, 1)
	cert, err := LoadCertificate(certFile, keyFile)
	require.NoError(t, err)
	addr := startTLS(t, newFake(), cert)

	served := func() *x509.Certificate {
		conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) // the test checks the leaf itself
		require.NoError(t, err)
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0]
	}
	require.Equal(t, c1.SerialNumber, served().SerialNumber)

	pool := x509.NewCertPool()
	pool.AddCert(c1)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get("https://" + addr + "/health")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	client.CloseIdleConnections()

	plain, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, plain.SetDeadline(time.Now().Add(5*time.Second)))
	fmt.Fprintf(plain, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
	got, _ := io.ReadAll(plain)
	plain.Close()
	require.NotContains(t, string(got), "healthy", "no plain HTTP on a TLS listener")

	_, _, c2 := writeSelfSigned(t, dir, 2)
	require.NoError(t, cert.Reload())
	require.Equal(t, c2.SerialNumber, served().SerialNumber, "new handshakes get the reloaded pair")

	require.NoError(t, os.WriteFile(keyFile, []byte("not a key"), 0o600))
	require.Error(t, cert.Reload())
	require.Equal(t, c2.SerialNumber, served().SerialNumber, "a failed reload keeps the pair in use")

	_, err = LoadCertificate(filepath.Join(dir, "missing.pem"), keyFile)
	require.Error(t, err)
}

// spec 3.6 under HTTPS: the disconnect watch looks at the TCP socket under the TLS session, so
// a client that closes (close_notify, then FIN) cancels its parked long-poll.
func TestTLSLongPollDisconnect(t *testing.T) {
	b, err := broker.Open(broker.Config{DataDir: t.TempDir(), Sync: "never", Logger: zerolog.Nop()})
	require.NoError(t, err)
	defer b.Close()
	certFile, keyFile, _ := writeSelfSigned(t, t.TempDir(), 1)
	cert, err := LoadCertificate(certFile, keyFile)
	require.NoError(t, err)
	addr := startTLS(t, b, cert)

	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	require.NoError(t, err)
	fmt.Fprintf(conn, "GET /api/v1/pop/queue/q?wait=true&timeout=60000 HTTP/1.1\r\nHost: x\r\n\r\n")
	require.Eventually(t, func() bool { return b.View().Counters().ParkedPops == 1 }, 5*time.Second, time.Millisecond)
	require.NoError(t, conn.Close())
	require.Eventually(t, func() bool { return b.View().Counters().ParkedPops == 0 }, 5*time.Second, 5*time.Millisecond,
		"the parked pop ends when its HTTPS client disconnects")
}
