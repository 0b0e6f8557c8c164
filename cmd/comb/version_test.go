package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/version"
)

func TestVersionFlagPrintsTheBuildVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	require.Equal(t, 0, dispatch([]string{"--version"}, &out, &errOut))
	line := strings.TrimSpace(out.String())
	require.Equal(t, "comb "+version.Read().String(), line)
	require.NotEqual(t, "dev", strings.TrimPrefix(line, "comb "))
	require.Empty(t, errOut.String())
}
