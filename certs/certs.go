package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"
)

// ErrNotCA: a certificate given as a CA that is not one (no CA basic constraint).
var ErrNotCA = errors.New("certs: not a CA certificate")

// backdate is how far before now a certificate's validity starts, so a node whose clock is a
// little behind the machine that made it still accepts it.
const backdate = time.Hour

// CA is a cluster's certificate authority: its certificate and private key.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA makes a self-signed CA named name (the certificate's common name), valid for validFor
// from now (less backdate before it).
//
// Errors: the random source's or x509's.
func NewCA(name string, validFor time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"comb cluster"}},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validFor),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true, // it signs node certificates, never another CA
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	return &CA{Cert: cert, Key: key}, nil
}

// Issue makes a node certificate for name (its common name; the node id) signed by ca, valid
// for validFor, usable as a TLS server and client certificate, for every host in hosts (IP
// addresses become IP SANs, anything else DNS names): the hosts other nodes dial this one at,
// which a dialer checks the certificate against. It returns the certificate and its new key in
// PEM.
//
// Errors: no host (a dialer could not verify the certificate for any address), the random
// source's or x509's.
func (ca *CA) Issue(name string, hosts []string, validFor time.Duration) (certPEM, keyPEM []byte, err error) {
	tmpl, err := nodeTemplate(name, hosts, validFor)
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: key of %s: %w", name, err)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: certificate of %s: %w", name, err)
	}
	keyPEM, err = encodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

func nodeTemplate(name string, hosts []string, validFor time.Duration) (*x509.Certificate, error) {
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name, Organization: []string{"comb cluster"}},
		NotBefore:    now.Add(-backdate),
		NotAfter:     now.Add(validFor),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		// Both: a member is a server on its raft port and a client when it dials another.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		switch ip := net.ParseIP(h); {
		case h == "":
		case ip != nil:
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		default:
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	if len(tmpl.IPAddresses)+len(tmpl.DNSNames) == 0 {
		return nil, fmt.Errorf("certs: certificate of %s: no host to issue it for", name)
	}
	return tmpl, nil
}

// CertPEM is the CA's certificate in PEM.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})
}

// KeyPEM is the CA's private key in PEM (PKCS #8).
func (ca *CA) KeyPEM() ([]byte, error) { return encodeKey(ca.Key) }

// ParseCA reads a CA from its certificate and key in PEM, as CertPEM and KeyPEM wrote them.
//
// Errors: no PEM block of the right type, a certificate that is not a CA (ErrNotCA), a key
// that is not ECDSA or does not belong to the certificate.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, errors.New("certs: no PEM certificate in the CA's certificate file")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%w: %s", ErrNotCA, cert.Subject.CommonName)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, errors.New("certs: no PEM key in the CA's key file")
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("certs: CA key: %w", err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok || !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("certs: the CA key is not the CA certificate's (or not ECDSA)")
	}
	return &CA{Cert: cert, Key: key}, nil
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// newSerial is a random 128-bit serial number (RFC 5280: positive, at most 20 bytes).
func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certs: serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}
