package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestServeClusterFlagsGoTogether(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--node-id", "n1"},
		{"--node-id", "n1", "--raft-addr", "127.0.0.1:7001"},
		{"--node-id", "n1", "--raft-addr", "127.0.0.1:7001", "--initial-cluster", "n1"},
		{"--node-id", "n4", "--raft-addr", "127.0.0.1:7001", "--initial-cluster", "n1=127.0.0.1:7001"},
		{"--node-id", "n1", "--raft-addr", "127.0.0.1:7001", "--initial-cluster", "n1=127.0.0.1:7001", "--initial-cluster-state", "old"},
	} {
		require.Equal(t, 2, runServe(append([]string{"--addr", freeAddr(t), "--data-dir", dir}, args...)), "%v", args)
	}
}

// issue 15: three comb serve started exactly as the acceptance check starts them (etcd's
// flags) elect a leader; /health says role leader on one and follower on the others, all
// naming the same leader; a push through the leader is answered, one through a follower is
// refused with 503 until forwarding exists (docs/replication.md).
func TestServeStartsAReplicatedCluster(t *testing.T) {
	const n = 3
	httpAddrs, raftAddrs := make([]string, n), make([]string, n)
	var cluster []string
	for i := range n {
		httpAddrs[i], raftAddrs[i] = freeAddr(t), freeAddr(t)
		cluster = append(cluster, fmt.Sprintf("n%d=%s", i+1, raftAddrs[i]))
	}
	exited := make(chan int, n)
	for i := range n {
		args := []string{"--addr", httpAddrs[i], "--data-dir", t.TempDir(), "--sync", "never", "--log-level", "error",
			"--node-id", fmt.Sprintf("n%d", i+1), "--raft-addr", raftAddrs[i], "--initial-cluster", strings.Join(cluster, ",")}
		go func() { exited <- runServe(args) }()
	}
	type health struct {
		Status string
		Role   string
		Leader *struct{ ID string }
	}
	roles := make([]health, n)
	deadline := time.Now().Add(30 * time.Second)
	for {
		leaders, followers := 0, 0
		for i, a := range httpAddrs {
			roles[i] = health{}
			resp, err := http.Get("http://" + a + "/health")
			if err != nil {
				continue
			}
			_ = json.NewDecoder(resp.Body).Decode(&roles[i])
			resp.Body.Close()
			switch {
			case roles[i].Role == "leader":
				leaders++
			case roles[i].Role == "follower" && roles[i].Leader != nil:
				followers++
			}
		}
		if leaders == 1 && followers == n-1 {
			break
		}
		require.True(t, time.Now().Before(deadline), "no leader with two followers: %+v", roles)
		select {
		case code := <-exited:
			t.Fatalf("a comb serve exited with %d", code)
		case <-time.After(20 * time.Millisecond):
		}
	}
	leader := -1
	for i, h := range roles {
		if h.Role == "leader" {
			leader = i
		}
	}
	for i, h := range roles {
		require.Equal(t, fmt.Sprintf("n%d", leader+1), h.Leader.ID, "node %d names the leader", i+1)
	}
	push := func(addr string) int {
		resp, err := http.Post("http://"+addr+"/api/v1/push", "application/json",
			strings.NewReader(`{"items":[{"queue":"q","payload":{"n":1}}]}`))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, 201, push(httpAddrs[leader]))
	require.Equal(t, 503, push(httpAddrs[(leader+1)%n]))

	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	for range n {
		select {
		case code := <-exited:
			require.Equal(t, 0, code)
		case <-time.After(30 * time.Second):
			t.Fatal("comb serve did not stop on SIGINT")
		}
	}
}
