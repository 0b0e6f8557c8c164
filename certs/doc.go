// Package certs makes the certificates a comb cluster's members authenticate each other with
// (issue 22, docs/operations.md "Peer certificates"): one certificate authority per cluster
// and, signed by it, one certificate per node that serves as both its TLS server certificate
// (the raft port) and its client certificate (when it dials another member). Keys are ECDSA
// P-256 and everything is written as PEM, so `openssl x509 -text` reads the result.
//
// It owns only making, writing and reading those files (crypto/x509 from the standard
// library); what a member trusts and checks is package replica's (peer_tls.go).
//
// # Files
//
//	<dir>/ca.crt      the cluster's CA certificate: every node's --peer-trusted-ca-file
//	<dir>/ca.key      the CA's private key (0600): keep it off the nodes
//	<dir>/<id>.crt    node id's certificate: its --peer-cert-file
//	<dir>/<id>.key    node id's private key (0600): its --peer-key-file
package certs
