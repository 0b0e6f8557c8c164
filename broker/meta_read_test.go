package broker

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// metaDir builds a data directory through the broker: queues "a" (partitions
// Default, p1, p2) and "b" (Default), "gone" created and deleted; returns it closed.
func metaDir(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	e.push("a", "", "t1")
	e.push("a", "p1", "t2")
	e.push("a", "p2", "t3")
	e.push("gone", "x", "t4")
	e.push("b", "", "t5")
	deleted, err := e.b.DeleteQueue("gone")
	require.NoError(t, err)
	require.True(t, deleted)
	require.NoError(t, e.b.Close())
	e.b = nil
	return e
}

// Issue 5: ReadMetadata decodes the journal the broker writes, read-only, with
// the same live queues and partitions Open rebuilds.
func TestReadMetadataMatchesTheBroker(t *testing.T) {
	e := metaDir(t)
	path := filepath.Join(e.dir, "meta", "journal")
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	m, err := ReadMetadata(e.dir)
	require.NoError(t, err)
	assert.Equal(t, path, m.File)
	assert.Equal(t, int64(len(before)), m.Bytes)
	assert.Equal(t, m.Bytes, m.ValidBytes)
	assert.False(t, m.DamageMidFile)
	assert.NoError(t, m.Err)
	var names []string
	for _, q := range m.Queues {
		names = append(names, q.Name)
	}
	assert.Equal(t, []string{"a", "b"}, names, "in creation order, deleted queues gone")
	got := map[string]string{}
	for id, p := range m.Partitions {
		assert.Equal(t, id, p.ID)
		assert.NotZero(t, p.CreatedAtMicros)
		got[p.Queue+"/"+p.Name] = uuidString(id)
	}
	e.open()
	want := map[string]string{}
	for id, p := range e.b.parts {
		want[p.q.name+"/"+p.name] = uuidString(id)
	}
	assert.Equal(t, want, got)
	assert.Len(t, got, 4)

	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after)
}

func TestReadMetadataMissingJournal(t *testing.T) {
	_, err := ReadMetadata(t.TempDir())
	require.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
}

// Issue 5: a flipped bit early in meta/journal makes Open fail with ErrCorrupt
// naming the file and byte range (it used to truncate there and forget every
// later queue); ReadMetadata reports the same damage without failing, and a torn
// tail is still repaired by Open.
func TestOpenRefusesMetadataDamageBeforeValidRecords(t *testing.T) {
	e := metaDir(t)
	path := filepath.Join(e.dir, "meta", "journal")
	data, err := os.ReadFile(path)
	require.NoError(t, err)

	torn := append(append([]byte(nil), data...), 9, 0, 0, 0, 1, 2)
	require.NoError(t, os.WriteFile(path, torn, 0o644))
	m, err := ReadMetadata(e.dir)
	require.NoError(t, err)
	assert.False(t, m.DamageMidFile)
	assert.Equal(t, int64(len(data)), m.ValidBytes)
	e.open()
	assert.Len(t, e.b.parts, 4, "a torn tail loses nothing acknowledged")
	require.NoError(t, e.b.Close())
	e.b = nil
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, data, after, "the torn tail was truncated")

	data[metaFrameHeader+5] ^= 0x04 // inside the first record
	require.NoError(t, os.WriteFile(path, data, 0o644))
	_, err = Open(Config{DataDir: e.dir, Sync: "never"})
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "bytes [0,")
	after, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, data, after, "nothing truncated")

	m, err = ReadMetadata(e.dir)
	require.NoError(t, err)
	assert.True(t, m.DamageMidFile)
	assert.Zero(t, m.ValidBytes)
	assert.ErrorIs(t, m.Err, ErrCorrupt)
}
