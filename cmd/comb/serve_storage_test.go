package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
	"github.com/combmq/comb/vfs"
)

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// captureStderr runs fn with os.Stderr redirected and returns what it wrote.
func captureStderr(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	old := os.Stderr
	os.Stderr = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	defer func() { os.Stderr = old }()
	fn()
	require.NoError(t, w.Close())
	return string(<-done)
}

// Issue 5: --max-segment-file-size (here from COMB_MAX_SEGMENT_FILE_SIZE) reaches
// the broker: a few KiB of pushes to one partition rotate its segment file.
func TestServeMaxSegmentFileSizeRotatesFiles(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	t.Setenv("COMB_MAX_SEGMENT_FILE_SIZE", "4KiB")
	exited := make(chan int, 1)
	go func() {
		exited <- runServe([]string{"--addr", addr, "--data-dir", dir, "--sync", "never", "--log-level", "error"})
	}()
	url := "http://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			break
		}
		require.True(t, time.Now().Before(deadline), "server did not come up: %v", err)
		select { // poll until the listener answers, or the server gives up
		case code := <-exited:
			t.Fatalf("comb serve exited with %d", code)
		case <-time.After(10 * time.Millisecond):
		}
	}
	for i := 0; i < 20; i++ {
		var body bytes.Buffer
		body.WriteString(`{"items":[`)
		for j := 0; j < 20; j++ {
			if j > 0 {
				body.WriteByte(',')
			}
			fmt.Fprintf(&body, `{"queue":"q","partition":"p","payload":{"n":%d,"h":"%x"}}`, i*20+j, uint64(i*20+j)*0x9E3779B97F4A7C15)
		}
		body.WriteString(`]}`)
		resp, err := http.Post(url+"/api/v1/push", "application/json", &body)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Less(t, resp.StatusCode, 300)
	}
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	select {
	case code := <-exited:
		require.Equal(t, 0, code)
	case <-time.After(30 * time.Second):
		t.Fatal("comb serve did not stop on SIGINT")
	}
	segs, err := filepath.Glob(filepath.Join(dir, "partitions", "*", "*.seg"))
	require.NoError(t, err)
	require.Greater(t, len(segs), 2, "the active file was sealed past 4 KiB: %v", segs)
	for _, s := range segs[:len(segs)-1] {
		st, err := os.Stat(s)
		require.NoError(t, err)
		require.Less(t, st.Size(), int64(8<<10), "%s sealed soon after 4 KiB", s)
	}
}

func TestServeRejectsBadMaxSegmentFileSize(t *testing.T) {
	args := []string{"--addr", freeAddr(t), "--data-dir", t.TempDir()}
	require.Equal(t, 2, runServe(append([]string{"--max-segment-file-size", "0"}, args...)))
	t.Setenv("COMB_MAX_SEGMENT_FILE_SIZE", "lots")
	require.Equal(t, 2, runServe(args), "a bad environment value stops serve before it opens anything")
}

// Issue 5: a metadata journal damaged before valid records stops comb serve with
// exit 1 and a message naming the file and byte range.
func TestServeRefusesDamagedMetadataJournal(t *testing.T) {
	dir := t.TempDir()
	b, err := broker.Open(broker.Config{DataDir: dir, Sync: "never", Logger: zerolog.Nop()})
	require.NoError(t, err)
	_, err = b.Push([]broker.PushItem{{Queue: "q", Partition: "a", Payload: []byte(`1`)}, {Queue: "q", Partition: "b", Payload: []byte(`2`)}})
	require.NoError(t, err)
	require.NoError(t, b.Close())
	path := filepath.Join(dir, "meta", "journal")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[20] ^= 0x01 // inside the first record
	require.NoError(t, os.WriteFile(path, data, 0o644))

	var code int
	out := captureStderr(t, func() {
		code = runServe([]string{"--addr", freeAddr(t), "--data-dir", dir})
	})
	require.Equal(t, 1, code)
	require.Contains(t, out, "meta/journal")
	require.Contains(t, out, "bytes [0,")
	require.Contains(t, out, "comb fsck")
}

// Issue 21: --flush-syncfs (here from COMB_FLUSH_SYNCFS) reaches the broker,
// which refuses it on a file system other than ext4, xfs or btrfs (tmpfs
// here), naming the type, with exit 1.
func TestServeRefusesFlushSyncFSOnTmpfs(t *testing.T) {
	magic, err := vfs.OS.(vfs.Typed).FSType("/dev/shm")
	require.NoError(t, err)
	require.Equal(t, vfs.MagicTmpfs, magic, "/dev/shm is tmpfs")
	dir, err := os.MkdirTemp("/dev/shm", "comb-flush-syncfs-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Setenv("COMB_FLUSH_SYNCFS", "true")
	var code int
	out := captureStderr(t, func() {
		code = runServe([]string{"--addr", freeAddr(t), "--data-dir", dir})
	})
	require.Equal(t, 1, code)
	require.Contains(t, out, dir+" is on tmpfs, not ext4, xfs or btrfs")
	require.Contains(t, out, "start without it")
}
