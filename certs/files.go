package certs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Defaults of Options' zero values.
const (
	DefaultCAValidFor   = 10 * 365 * 24 * time.Hour
	DefaultNodeValidFor = 365 * 24 * time.Hour
)

// Node is one member to issue a certificate for: its node id (--node-id) and the hosts the
// other members dial it at (the host of its --raft-addr).
type Node struct {
	ID    string
	Hosts []string
}

// Options configures Make; zero values take the defaults.
type Options struct {
	CAName       string        // the CA's common name; "" = "comb cluster CA"
	CAValidFor   time.Duration // a new CA's lifetime; 0 = DefaultCAValidFor
	NodeValidFor time.Duration // a node certificate's lifetime; 0 = DefaultNodeValidFor
}

// CAFile, CAKeyFile, CertFile and KeyFile are where Make writes under dir (doc.go, "Files").
func CAFile(dir string) string       { return filepath.Join(dir, "ca.crt") }
func CAKeyFile(dir string) string    { return filepath.Join(dir, "ca.key") }
func CertFile(dir, id string) string { return filepath.Join(dir, id+".crt") }
func KeyFile(dir, id string) string  { return filepath.Join(dir, id+".key") }

// checkID refuses a node id that would not name a file of its own under dir.
func checkID(id string) error {
	if id == "" || id == "ca" || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") {
		return fmt.Errorf("certs: node id %q cannot name a file (empty, \"ca\", a path or a dot file)", id)
	}
	return nil
}

// Make writes a certificate and key for every node in nodes under dir (created 0700), signed
// by the CA in dir: the one already there (ca.crt and ca.key, so a node added later gets a
// certificate of the same cluster), or a new one. A node's existing files are replaced (a new
// key: rotation). It returns the files it wrote and whether it made the CA.
//
// Durability: every file is written to a temporary name, fsynced and renamed into place, then
// dir is fsynced; a crash leaves each file whole, old or new. Keys are 0600.
//
// Errors: a node id that cannot name a file, a node without hosts, only one of ca.crt and
// ca.key present, an unreadable CA, the file system's.
func Make(dir string, nodes []Node, opt Options) (written []string, newCA bool, err error) {
	if opt.CAName == "" {
		opt.CAName = "comb cluster CA"
	}
	if opt.CAValidFor <= 0 {
		opt.CAValidFor = DefaultCAValidFor
	}
	if opt.NodeValidFor <= 0 {
		opt.NodeValidFor = DefaultNodeValidFor
	}
	for _, n := range nodes {
		if err := checkID(n.ID); err != nil {
			return nil, false, err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("certs: %w", err)
	}
	ca, err := loadCA(dir)
	if err != nil {
		return nil, false, err
	}
	if ca == nil {
		if ca, err = NewCA(opt.CAName, opt.CAValidFor); err != nil {
			return nil, false, err
		}
		keyPEM, err := ca.KeyPEM()
		if err != nil {
			return nil, false, err
		}
		// The key first: a crash between the two leaves no ca.crt whose key is lost.
		if err := writeFile(CAKeyFile(dir), keyPEM, 0o600); err != nil {
			return nil, false, err
		}
		if err := writeFile(CAFile(dir), ca.CertPEM(), 0o644); err != nil {
			return nil, false, err
		}
		written, newCA = append(written, CAFile(dir), CAKeyFile(dir)), true
	}
	for _, n := range nodes {
		certPEM, keyPEM, err := ca.Issue(n.ID, n.Hosts, opt.NodeValidFor)
		if err != nil {
			return written, newCA, err
		}
		if err := writeFile(KeyFile(dir, n.ID), keyPEM, 0o600); err != nil {
			return written, newCA, err
		}
		if err := writeFile(CertFile(dir, n.ID), certPEM, 0o644); err != nil {
			return written, newCA, err
		}
		written = append(written, CertFile(dir, n.ID), KeyFile(dir, n.ID))
	}
	return written, newCA, syncDir(dir)
}

// loadCA reads dir's CA, nil when neither of its files exists.
func loadCA(dir string) (*CA, error) {
	certPEM, cerr := os.ReadFile(CAFile(dir))
	keyPEM, kerr := os.ReadFile(CAKeyFile(dir))
	switch {
	case errors.Is(cerr, fs.ErrNotExist) && errors.Is(kerr, fs.ErrNotExist):
		return nil, nil
	case cerr != nil:
		return nil, fmt.Errorf("certs: %s is there but not %s: %w", CAKeyFile(dir), CAFile(dir), cerr)
	case kerr != nil:
		return nil, fmt.Errorf("certs: %s is there but not its key (%s is needed to sign more certificates): %w", CAFile(dir), CAKeyFile(dir), kerr)
	}
	ca, err := ParseCA(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return ca, nil
}

// writeFile writes data to path whole or not at all (temp, fsync, rename).
func writeFile(path string, data []byte, perm os.FileMode) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("certs: %s: %w", path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("certs: sync %s: %w", dir, err)
	}
	return nil
}
