package replica

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHelloRoundTrip(t *testing.T) {
	h1 := hashCluster([]Peer{{"n1", "a:1"}, {"n2", "b:2"}})
	for _, h := range []hello{
		{purpose: purposeRaft, node: "n1", hash: h1},
		{purpose: purposeHTTP, node: "n2", cluster: "0123456789abcdef0123456789abcdef", hash: h1},
		{purpose: purposePing, node: "n4", hash: h1, join: true},
	} {
		b := append(encodeHello(h), "raft bytes"...)
		r := bytes.NewReader(b)
		got, err := readHello(r)
		require.NoError(t, err)
		require.Equal(t, h, got)
		rest, _ := io.ReadAll(r)
		require.Equal(t, "raft bytes", string(rest), "readHello reads nothing past the hello")
	}
	v, msg, err := readVerdict(bytes.NewReader(encodeVerdict(verdictForeign, "no")))
	require.NoError(t, err)
	require.Equal(t, byte(verdictForeign), v)
	require.Equal(t, "no", msg)
}

func TestReadHelloRefuses(t *testing.T) {
	good := encodeHello(hello{purpose: purposeRaft, node: "n1"})
	for name, b := range map[string][]byte{
		"raft's first byte (an AppendEntries)": {0, 0x85, 0xa4},
		"HTTP":                                 []byte("GET / HTTP/1.1\r\n\r\n"),
		"another version":                      append([]byte("comb\x02"), good[5:]...),
		"unknown purpose":                      append([]byte("comb\x01\x09"), good[6:]...),
		"unknown flag":                         append([]byte("comb\x01\x01\x02"), good[7:]...),
		"empty node id":                        append([]byte("comb\x01\x01\x00\x00"), good[8:]...),
		"cluster id past its bound":            append(encodeHello(hello{purpose: purposeRaft, node: "n1"})[:10], 65),
		"cluster id with a slash":              encodeHello(hello{purpose: purposeRaft, node: "n1", cluster: "a/b"}),
	} {
		_, err := readHello(bytes.NewReader(b))
		require.Error(t, err, name)
		if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			require.ErrorIs(t, err, ErrBadHello, name)
		}
	}
	_, err := readHello(bytes.NewReader(good[:len(good)-1]))
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "a torn hello")
}

// admit's rule, case by case (peer_hello.go): which pairs of members form one cluster.
func TestAdmit(t *testing.T) {
	h1, h2 := hashCluster([]Peer{{"n1", "a:1"}, {"n2", "b:2"}}), hashCluster([]Peer{{"n1", "a:1"}, {"n3", "c:3"}})
	require.Equal(t, h1, hashCluster([]Peer{{"n2", "b:2"}, {"n1", "a:1"}}), "the order of --initial-cluster does not count")
	member := func(id string, h clusterHash) hello { return hello{node: "m", cluster: id, hash: h} }
	fresh := func(h clusterHash, join bool) hello { return hello{node: "f", hash: h, join: join} }
	for _, c := range []struct {
		name          string
		local, remote hello
		adopt         bool
		err           error
	}{
		{"same cluster", member("A", h1), member("A", h1), false, nil},
		{"another cluster", member("A", h1), member("B", h1), false, ErrForeignCluster},
		{"another cluster, whatever the lists", member("A", h1), member("B", h2), false, ErrForeignCluster},
		{"new cluster, same list", fresh(h1, false), fresh(h1, false), false, nil},
		{"new cluster, another list", fresh(h1, false), fresh(h2, false), false, ErrInitialClusterMismatch},
		{"new cluster, a joiner", fresh(h1, false), fresh(h2, true), false, nil},
		{"an emptied member, the bootstrap list: adopts", fresh(h1, false), member("A", h1), true, nil},
		{"an emptied member seen by the cluster", member("A", h1), fresh(h1, false), false, nil},
		{"a fresh node with another list", member("A", h1), fresh(h2, false), false, ErrInitialClusterMismatch},
		{"a fresh node with another list, seen by it", fresh(h2, false), member("A", h1), false, ErrInitialClusterMismatch},
		{"a joiner adopts", fresh(h2, true), member("A", h1), true, nil},
		{"a joiner is admitted", member("A", h1), fresh(h2, true), false, nil},
	} {
		adopt, err := admit(c.local, c.remote)
		if c.err == nil {
			require.NoError(t, err, c.name)
		} else {
			require.ErrorIs(t, err, c.err, c.name)
		}
		require.Equal(t, c.adopt, adopt, c.name)
	}
}

func TestClusterIDCommandAndFile(t *testing.T) {
	c := clusterIDCommand{id: "0123456789abcdef0123456789abcdef", hash: hashCluster([]Peer{{"n1", "a:1"}})}
	got, err := decodeClusterID(encodeClusterID(c))
	require.NoError(t, err)
	require.Equal(t, c, got)
	for name, b := range map[string][]byte{
		"empty":        nil,
		"short hash":   encodeClusterID(c)[:40],
		"long":         append(encodeClusterID(c), 0),
		"empty id":     encodeClusterID(clusterIDCommand{}),
		"an entry":     encodeEntry(entry{lsn: 1, kind: 1}),
		"bad id bytes": encodeClusterID(clusterIDCommand{id: "a b"}),
	} {
		_, err := decodeClusterID(b)
		require.ErrorIs(t, err, ErrBadClusterID, name)
	}

	dir := t.TempDir()
	id, err := loadIdentity(dir, []Peer{{"n1", "a:1"}}, false)
	require.NoError(t, err)
	require.Equal(t, "", id.get().id)
	adopted, err := id.adopt(c)
	require.NoError(t, err)
	require.True(t, adopted)
	adopted, err = id.adopt(c)
	require.NoError(t, err)
	require.False(t, adopted, "the same id again")
	_, err = id.adopt(clusterIDCommand{id: "other", hash: c.hash})
	require.ErrorIs(t, err, ErrForeignCluster, "a node never changes its cluster")
	again, err := loadIdentity(dir, nil, false)
	require.NoError(t, err)
	require.Equal(t, c, again.get(), "kept across a restart")

	for name, data := range map[string]string{
		"not JSON":   "x",
		"no id":      `{"initialClusterSha256":"00"}`,
		"short hash": `{"clusterId":"a","initialClusterSha256":"00"}`,
	} {
		_, err := parseClusterIDFile([]byte(data))
		require.ErrorIs(t, err, ErrBadClusterID, name)
	}
}

// FuzzReadHello: no input panics either handshake reader, and whatever readHello accepts
// re-encodes to the same hello.
func FuzzReadHello(f *testing.F) {
	f.Add(encodeHello(hello{purpose: purposeRaft, node: "n1", cluster: "abc"}))
	f.Add(encodeHello(hello{purpose: purposePing, node: "n4", join: true}))
	f.Add(encodeVerdict(verdictInitialCluster, "another list"))
	f.Add([]byte("comb\x01\x01\x00\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _ = readVerdict(bytes.NewReader(data))
		h, err := readHello(bytes.NewReader(data))
		if err != nil {
			return
		}
		again, err := readHello(bytes.NewReader(encodeHello(h)))
		if err != nil || again != h {
			t.Fatalf("re-encoding %+v gave %+v, %v", h, again, err)
		}
	})
}

// FuzzParseClusterIDFile: no file content panics the reader, and what it accepts is an id
// checkClusterID accepts.
func FuzzParseClusterIDFile(f *testing.F) {
	f.Add([]byte(`{"clusterId":"0123456789abcdef0123456789abcdef","initialClusterSha256":"` + string(bytes.Repeat([]byte("ab"), 32)) + `"}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseClusterIDFile(data)
		if err == nil && checkClusterID(c.id) != nil {
			t.Fatalf("accepted id %q", c.id)
		}
	})
}
