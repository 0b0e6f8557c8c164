package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Issue 25: -h names the dump flag's placeholder FILE (it showed `-dump comb dump --payload`),
// and lists the flags replay gained.
func TestReplayHelp(t *testing.T) {
	code, _, stderr := runComb(t, "replay", "-h")
	require.Equal(t, 0, code)
	require.Contains(t, stderr, "\n  -dump FILE\n")
	require.Contains(t, stderr, "\n  -token-file FILE\n")
	require.Contains(t, stderr, "\n  -allow-plaintext\n")
	require.Contains(t, stderr, "\n  -no-config\n")
	require.NotContains(t, stderr, "-dump comb dump")
}

func TestReplayBadFlagIsShort(t *testing.T) {
	code, _, stderr := runComb(t, "replay", "--batch", "many")
	require.Equal(t, 2, code)
	require.Equal(t, "comb replay: --batch \"many\": want a whole number, like 500\nsee comb replay -h\n", stderr)
}

func TestReplayToken(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tok, err := replayToken("", env(map[string]string{"COMB_TOKEN": " abc\n"}))
	require.NoError(t, err)
	require.Equal(t, "abc", tok)
	f := filepath.Join(t.TempDir(), "tok")
	require.NoError(t, os.WriteFile(f, []byte("eyJ.x.y\n"), 0o600))
	tok, err = replayToken(f, env(map[string]string{"COMB_TOKEN": "ignored"}))
	require.NoError(t, err)
	require.Equal(t, "eyJ.x.y", tok, "the file wins")
	require.NoError(t, os.WriteFile(f, []byte("\n"), 0o600))
	_, err = replayToken(f, env(nil))
	require.EqualError(t, err, "--token-file "+f+" is empty")
	_, err = replayToken(filepath.Join(t.TempDir(), "missing"), env(nil))
	require.True(t, strings.HasPrefix(err.Error(), "--token-file: open "))
}
