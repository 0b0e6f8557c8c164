package httpapi

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Issue 25: plain HTTP to the TLS port answers 400 with a hint instead of an empty reply, and
// HTTPS on the same port still works.
func TestPlainHTTPOnTheTLSPortAnswers400WithAHint(t *testing.T) {
	certFile, keyFile, c := writeSelfSigned(t, t.TempDir(), 1)
	cert, err := LoadCertificate(certFile, keyFile)
	require.NoError(t, err)
	addr := startTLS(t, newFake(), cert)

	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = conn.Write([]byte("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	reply, err := io.ReadAll(conn)
	require.NoError(t, err)
	require.Equal(t, string(plainOnTLSAnswer), string(reply))
	require.Contains(t, string(reply), "HTTP/1.1 400 Bad Request\r\n")

	pool := x509.NewCertPool()
	pool.AddCert(c)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get("https://" + addr + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
}
