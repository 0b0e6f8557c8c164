package doctest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseKindsAndDirectives(t *testing.T) {
	md := "# t\n" + // 1
		"```sh\n" + // 2
		"echo a\n" +
		"```\n" +
		"```text\n" + // 5
		"shown only\n" +
		"```\n" +
		"    indented: shown only\n" +
		"<!-- readme-test: skip needs a real database -->\n" +
		"```sh\n" + // 10
		"psql\n" +
		"```\n" +
		"1. a list item:\n" +
		"   <!-- readme-test: needs QUEEN_PG_URL a Queen PostgreSQL -->\n" +
		"   ```bash\n" + // 15
		"   comb import --from-queen \"$QUEEN_PG_URL\"\n" +
		"    deeper\n" +
		"   ```\n" +
		"<!-- readme-test: background http://localhost:6632/health -->\n" +
		"```sh\n" + // 20
		"make run\n" +
		"```\n" +
		"<!-- readme-test: stop -->\n" +
		"````sh\n" + // 24
		"comb fsck ./comb-data\n" +
		"```\n" +
		"````\n"
	blocks, err := Parse([]byte(md))
	require.NoError(t, err)
	require.Len(t, blocks, 6)

	require.Equal(t, Block{Line: 2, Lang: "sh", Text: "echo a\n", Kind: Run}, blocks[0], "an sh fence runs")
	require.Equal(t, Shown, blocks[1].Kind, "a text fence is shown only")
	require.Equal(t, 5, blocks[1].Line)
	require.Equal(t, Skip, blocks[2].Kind)
	require.Equal(t, "needs a real database", blocks[2].Reason)
	require.Equal(t, Block{Line: 15, Lang: "bash", Kind: Run, Needs: "QUEEN_PG_URL", Reason: "a Queen PostgreSQL",
		Text: "comb import --from-queen \"$QUEEN_PG_URL\"\n deeper\n"}, blocks[3],
		"a fence in a list item loses the fence's indentation, no more")
	require.Equal(t, Background, blocks[4].Kind)
	require.Equal(t, "http://localhost:6632/health", blocks[4].Wait)
	require.True(t, blocks[5].Stop)
	require.Equal(t, Run, blocks[5].Kind)
	require.Equal(t, "comb fsck ./comb-data\n```\n", blocks[5].Text, "a shorter fence inside a longer one is content")
}

func TestParseRefusesWhatItCannotHonour(t *testing.T) {
	for name, md := range map[string]string{
		"an unknown directive":                 "<!-- readme-test: sometimes -->\n```sh\nx\n```\n",
		"skip without a reason":                "<!-- readme-test: skip -->\n```sh\nx\n```\n",
		"background without a URL":             "<!-- readme-test: background -->\n```sh\nx\n```\n",
		"needs without a reason":               "<!-- readme-test: needs PG_URL -->\n```sh\nx\n```\n",
		"a directive before a block not run":   "<!-- readme-test: skip slow -->\n```text\nx\n```\n",
		"a directive separated from its fence": "<!-- readme-test: skip slow -->\nprose\n```sh\nx\n```\n",
		"a directive at the end":               "<!-- readme-test: stop -->\n",
		"an unclosed fence":                    "```sh\nx\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(md))
			require.Error(t, err)
			require.Contains(t, err.Error(), "line 1")
		})
	}
}
