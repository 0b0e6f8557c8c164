package replica

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	json "github.com/goccy/go-json"
)

// The cluster id (issue 22): a random id the first leader of a new cluster proposes through
// the log, which every member keeps in <Dir>/cluster-id and presents when it connects to
// another (peer_hello.go). A node or a data directory of another cluster is refused there,
// never merged; so are members of a new cluster started with different --initial-cluster
// lists, which present a hash of theirs until the cluster has an id.

// clusterIDFile is the cluster id's file under raft's directory (<data>/raft/cluster-id).
const clusterIDFile = "cluster-id"

// clusterIDVersion is the first byte of the cluster id command (doc.go, "Command format").
const clusterIDVersion = 3

// maxClusterIDLen bounds an id read from a peer or a file; this package makes 32 hex digits.
const maxClusterIDLen = 64

// ErrBadClusterID: a cluster id command, file or handshake field that does not hold one.
var ErrBadClusterID = errors.New("replica: not a cluster id")

// clusterHash is the SHA-256 of a sorted --initial-cluster ("id=host:port" joined by ","), so
// the same members given in another order hash alike.
type clusterHash [sha256.Size]byte

func hashCluster(peers []Peer) clusterHash {
	items := make([]string, 0, len(peers))
	for _, p := range peers {
		items = append(items, p.ID+"="+p.Addr)
	}
	sort.Strings(items)
	return sha256.Sum256([]byte(strings.Join(items, ",")))
}

// short is the hash's first 12 hex digits, for messages.
func (h clusterHash) short() string { return hex.EncodeToString(h[:6]) }

// checkClusterID: 1 to maxClusterIDLen letters, digits, '-' or '_' (it is printed in errors
// and written in a file).
func checkClusterID(id string) error {
	if id == "" || len(id) > maxClusterIDLen || strings.IndexFunc(id, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) >= 0 {
		return fmt.Errorf("%w: %q", ErrBadClusterID, id)
	}
	return nil
}

// newClusterID is 16 random bytes in hex.
func newClusterID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("replica: cluster id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// clusterIDCommand is the raft command a leader proposes when the cluster has no id yet: the
// id and the hash of the --initial-cluster the cluster was bootstrapped with.
//
//	version u8 (3) | id length u8 (1-64) | id | initial-cluster SHA-256 (32 bytes)
type clusterIDCommand struct {
	id   string
	hash clusterHash
}

func encodeClusterID(c clusterIDCommand) []byte {
	b := make([]byte, 0, 2+len(c.id)+len(c.hash))
	b = append(b, clusterIDVersion, byte(len(c.id)))
	b = append(b, c.id...)
	return append(b, c.hash[:]...)
}

// decodeClusterID reads what encodeClusterID wrote.
//
// Errors: ErrBadClusterID for another version, a length that does not match, or an id
// checkClusterID refuses.
func decodeClusterID(data []byte) (clusterIDCommand, error) {
	if len(data) < 2 || data[0] != clusterIDVersion {
		return clusterIDCommand{}, fmt.Errorf("%w: command of %d bytes", ErrBadClusterID, len(data))
	}
	n := int(data[1])
	if len(data) != 2+n+sha256.Size {
		return clusterIDCommand{}, fmt.Errorf("%w: id of %d bytes in a command of %d", ErrBadClusterID, n, len(data))
	}
	c := clusterIDCommand{id: string(data[2 : 2+n])}
	copy(c.hash[:], data[2+n:])
	if err := checkClusterID(c.id); err != nil {
		return clusterIDCommand{}, err
	}
	return c, nil
}

// clusterIDJSON is <Dir>/cluster-id.
type clusterIDJSON struct {
	ClusterID string `json:"clusterId"`
	// InitialClusterSHA256 is the hash of the --initial-cluster the cluster was bootstrapped
	// with (hex): a member with no id yet (a new or emptied directory) must present the same.
	InitialClusterSHA256 string `json:"initialClusterSha256"`
}

// parseClusterIDFile reads <Dir>/cluster-id.
//
// Errors: ErrBadClusterID for anything but the JSON object above with a valid id and a
// 64-digit hash.
func parseClusterIDFile(data []byte) (clusterIDCommand, error) {
	var f clusterIDJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return clusterIDCommand{}, fmt.Errorf("%w: %v", ErrBadClusterID, err)
	}
	if err := checkClusterID(f.ClusterID); err != nil {
		return clusterIDCommand{}, err
	}
	h, err := hex.DecodeString(f.InitialClusterSHA256)
	if err != nil || len(h) != sha256.Size {
		return clusterIDCommand{}, fmt.Errorf("%w: initialClusterSha256 %q is not 64 hex digits", ErrBadClusterID, f.InitialClusterSHA256)
	}
	c := clusterIDCommand{id: f.ClusterID}
	copy(c.hash[:], h)
	return c, nil
}

// identity is who this node says it is to another member (peer_hello.go): its cluster's id
// once it has one, else the hash of this start's --initial-cluster and whether it joins.
// Safe for concurrent use: the handshakes of several connections and raft's FSM adopt an id.
type identity struct {
	path string      // <Dir>/cluster-id
	boot clusterHash // this start's --initial-cluster
	join bool        // --initial-cluster-state existing

	mu      sync.Mutex
	cluster clusterIDCommand // id "" until the node has one
}

// loadIdentity reads dir's cluster id, if it has one.
//
// Errors: a cluster-id file that cannot be read or parsed (never ignored: a node whose id is
// lost could be merged into another cluster).
func loadIdentity(dir string, peers []Peer, join bool) (*identity, error) {
	id := &identity{path: filepath.Join(dir, clusterIDFile), boot: hashCluster(peers), join: join}
	data, err := os.ReadFile(id.path)
	if errors.Is(err, os.ErrNotExist) {
		return id, nil
	}
	if err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	if id.cluster, err = parseClusterIDFile(data); err != nil {
		return nil, fmt.Errorf("replica: %s: %w", id.path, err)
	}
	return id, nil
}

// get is the node's cluster id and the hash the cluster was bootstrapped with (id "" when it
// has none yet).
func (i *identity) get() clusterIDCommand {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.cluster
}

// adopt makes c this node's cluster id when it has none, durably (temporary file, fsync,
// rename, fsync of the directory) before it returns; the same id again does nothing.
//
// Errors: ErrForeignCluster when the node has another id (the caller refuses the peer or the
// entry that carried c), the file system's.
func (i *identity) adopt(c clusterIDCommand) (bool, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.cluster.id == c.id {
		return false, nil
	}
	if i.cluster.id != "" {
		return false, fmt.Errorf("%w: offered cluster %s, this node's directory belongs to cluster %s", ErrForeignCluster, c.id, i.cluster.id)
	}
	data, err := json.Marshal(clusterIDJSON{ClusterID: c.id, InitialClusterSHA256: hex.EncodeToString(c.hash[:])})
	if err != nil {
		return false, fmt.Errorf("replica: cluster id: %w", err)
	}
	tmp := i.path + ".tmp"
	if err := writeSynced(tmp, append(data, '\n')); err != nil {
		return false, err
	}
	if err := os.Rename(tmp, i.path); err != nil {
		return false, fmt.Errorf("replica: %w", err)
	}
	if err := syncDir(filepath.Dir(i.path)); err != nil {
		return false, err
	}
	i.cluster = c
	return true, nil
}
