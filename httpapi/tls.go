package httpapi

import (
	"crypto/tls"
	"fmt"
	"sync/atomic"
)

// Certificate is the server's TLS certificate and key, loaded from PEM files (`comb serve
// --tls-cert/--tls-key`) and reloadable while serving (SIGHUP): new handshakes use the new pair,
// open connections keep theirs. A reload that fails keeps the pair in use.
type Certificate struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// LoadCertificate reads the pair. Errors: unreadable files, a key that does not match the
// certificate.
func LoadCertificate(certFile, keyFile string) (*Certificate, error) {
	c := &Certificate{certFile: certFile, keyFile: keyFile}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the files again; on error the previous pair stays in use.
func (c *Certificate) Reload() error {
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("tls: certificate %s, key %s: %w", c.certFile, c.keyFile, err)
	}
	c.cur.Store(&pair)
	return nil
}

// TLSConfig is the server side: TLS 1.2 or later, HTTP/1.1 only (fasthttp speaks no HTTP/2),
// the current pair on every handshake.
func (c *Certificate) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cur.Load(), nil
		},
	}
}
