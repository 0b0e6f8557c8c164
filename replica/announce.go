package replica

import (
	"errors"
	"fmt"
	"sync"
)

// ErrBadAnnounce: a raft command that starts with announceVersion but does
// not hold a well-formed announcement.
var ErrBadAnnounce = errors.New("replica: not a leader announcement")

// announceVersion is the first byte of an announcement, a replica-internal
// command (doc.go, "Command format"). It differs from entryVersion so a
// build that knows only comb entries refuses it as an unknown version
// (ErrBadEntry) instead of reading it as one.
const announceVersion = 2

// announcement says that node serves HTTP at httpAddr; a leader proposes one
// after its barrier so that every node can forward requests to it
// (httpapi's forward.go).
type announcement struct {
	node     string // --node-id, 1..255 bytes
	httpAddr string // host:port, 1.. bytes
}

// encodeAnnounce returns the command bytes of a:
//
//	version u8 (2) | node id length u8 | node id | HTTP address (to the end)
func encodeAnnounce(a announcement) []byte {
	b := make([]byte, 0, 2+len(a.node)+len(a.httpAddr))
	b = append(b, announceVersion, byte(len(a.node)))
	b = append(b, a.node...)
	return append(b, a.httpAddr...)
}

// decodeAnnounce reads what encodeAnnounce wrote.
//
// Errors: ErrBadAnnounce for another version, a truncated node id, or an
// empty node id or address.
func decodeAnnounce(data []byte) (announcement, error) {
	if len(data) < 2 || data[0] != announceVersion {
		return announcement{}, fmt.Errorf("%w: %d bytes", ErrBadAnnounce, len(data))
	}
	n := int(data[1])
	if n == 0 || len(data) < 2+n+1 {
		return announcement{}, fmt.Errorf("%w: node id of %d bytes in a command of %d", ErrBadAnnounce, n, len(data))
	}
	return announcement{node: string(data[2 : 2+n]), httpAddr: string(data[2+n:])}, nil
}

// httpAddrs is every node's announced HTTP address, as applied from the log
// (and restored from a snapshot marker). Read on every forwarded request,
// written once per election: readers take the read lock only.
type httpAddrs struct {
	mu sync.RWMutex
	m  map[string]string // node id → host:port
}

func (h *httpAddrs) get(node string) string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.m[node]
}

func (h *httpAddrs) set(node, addr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[string]string{}
	}
	h.m[node] = addr
}

// copy returns a copy for a snapshot marker.
func (h *httpAddrs) copy() map[string]string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	c := make(map[string]string, len(h.m))
	for k, v := range h.m {
		c[k] = v
	}
	return c
}

// replace installs a snapshot's map (nil leaves the current one: a marker
// of version 1 carries none).
func (h *httpAddrs) replace(m map[string]string) {
	if m == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.m = m
}
