package replica

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// peerSessionCache is how many members' TLS sessions a node keeps for resumption.
const peerSessionCache = 64

// LoadPeerTLS reads a member's peer TLS files (comb serve --peer-cert-file, --peer-key-file,
// --peer-trusted-ca-file, etcd's names) into the Config.PeerTLS both sides of a peer
// connection use: the node's certificate, presented as a server on the raft port and as a
// client when it dials; the CA bundle (one CA, or two during a CA rollover) that every other
// member's certificate must chain to, either way. TLS 1.3 only: both ends are comb.
//
// Errors: a file that cannot be read, a key that is not the certificate's, a CA file with no
// PEM certificate, a certificate that does not chain to the CA file or is not made for both
// server and client authentication (certs.Make's are), each naming the flag.
func LoadPeerTLS(certFile, keyFile, caFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("--peer-cert-file %s / --peer-key-file %s: %w", certFile, keyFile, err)
	}
	data, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--peer-trusted-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("--peer-trusted-ca-file %s: no PEM certificate in it", caFile)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("--peer-cert-file %s: %w", certFile, err)
	}
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	for _, use := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{use}}); err != nil {
			return nil, fmt.Errorf("--peer-cert-file %s is not usable with --peer-trusted-ca-file %s (a member's certificate must chain to the cluster CA and allow server and client authentication; `comb certs` makes such): %w",
				certFile, caFile, err)
		}
	}
	if len(leaf.IPAddresses)+len(leaf.DNSNames) == 0 {
		return nil, errors.New("--peer-cert-file " + certFile + " names no host (subject alternative name): other members could not verify it for the address they dial")
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
		// A dialer resumes its sessions (TLS 1.3 PSK; the listener's tickets are keyed per
		// process and carry the verified certificate): a follower opens a connection per
		// forwarded long-poll, and a full handshake costs an ECDSA signature and a chain check
		// each way (BenchmarkPeerDial).
		ClientSessionCache: tls.NewLRUClientSessionCache(peerSessionCache),
	}, nil
}
