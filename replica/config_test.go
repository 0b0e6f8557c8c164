package replica

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseCluster(t *testing.T) {
	cases := []struct {
		name, in string
		want     []Peer
		bad      bool
	}{
		{name: "etcd's convention, as the acceptance check starts nodes", in: "n1=127.0.0.1:7001,n2=127.0.0.1:7002,n3=127.0.0.1:7003",
			want: []Peer{{"n1", "127.0.0.1:7001"}, {"n2", "127.0.0.1:7002"}, {"n3", "127.0.0.1:7003"}}},
		{name: "spaces and a trailing comma are ignored", in: " n1=h:1 , n2=h:2,", want: []Peer{{"n1", "h:1"}, {"n2", "h:2"}}},
		{name: "no equals sign", in: "n1", bad: true},
		{name: "empty id", in: "=h:1", bad: true},
		{name: "no port", in: "n1=h", bad: true},
		{name: "an id twice", in: "n1=h:1,n1=h:2", bad: true},
		{name: "empty", in: "", bad: true},
		{name: "an address twice", in: "n1=h:1,n2=h:1", bad: true},
		{name: "no host", in: "n1=:7001", bad: true},
		{name: "a wildcard host: the others cannot dial it", in: "n1=0.0.0.0:7001", bad: true},
		{name: "an IPv6 wildcard host", in: "n1=[::]:7001", bad: true},
		{name: "a port that is not a number", in: "n1=h:abc", bad: true},
		{name: "a port past 65535", in: "n1=h:99999", bad: true},
		{name: "port 0", in: "n1=h:0", bad: true},
		{name: "an IPv6 host", in: "n1=[::1]:7001", want: []Peer{{"n1", "[::1]:7001"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseCluster(c.in)
			if c.bad {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func TestConfigCheck(t *testing.T) {
	peers := []Peer{{"n1", "h:1"}, {"n2", "h:2"}}
	require.NoError(t, (&Config{NodeID: "n1", RaftAddr: "h:1", Dir: "d", Cluster: peers}).Validate())
	require.Error(t, (&Config{NodeID: "n3", RaftAddr: "h:3", Dir: "d", Cluster: peers}).Validate(), "a node outside its cluster")
	require.Error(t, (&Config{NodeID: "n1", RaftAddr: "h:9", Dir: "d", Cluster: peers}).Validate(), "--raft-addr disagreeing with --initial-cluster")
	require.Error(t, (&Config{RaftAddr: "h:1", Dir: "d", Cluster: peers}).Validate(), "no node id")
}
