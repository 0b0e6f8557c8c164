package doctest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestExpectationsAreTheArrowLines(t *testing.T) {
	exps := expectations("curl -s x\n# → {\"a\":1}\n# not one\n   #→ b\necho # → inline is a comment, not an expectation\n", 10)
	require.Len(t, exps, 2)
	require.Equal(t, 11, exps[0].Line)
	require.Equal(t, `{"a":1}`, exps[0].Text)
	require.Equal(t, 13, exps[1].Line)
	require.Equal(t, "b", exps[1].Text)
}

func TestCheck(t *testing.T) {
	out := `{"success":true,"query_id":"01a2-ff","name":"q"}` + "\n" +
		`[{"index":0}]{"success":true,"state_ops_applied":1,"push_results":[{"x":1}],"ack_result":{"success":true,"count":3,"lease_released":true}}` + "\n"
	for name, c := range map[string]struct {
		text string
		ok   bool
	}{
		"literal text":                     {`"name":"q"`, true},
		"<name> is one value":              {`{"success":true,"query_id":"<query_id>","name":"q"}`, true},
		"<name> does not span a delimiter": {`"query_id":"<id>}`, false},
		"<N> matches a number":             {`"count":<N>,"lease_released":true`, true},
		"... spans text on a line":         {`{"success":true,...,"push_results":[...],"ack_result":{"success":true,...}}`, true},
		"... does not span lines":          {`"name":"q"...state_ops_applied`, false},
		"regexp characters are literal":    {`[{"index":0}]`, true},
		"a value that differs fails":       {`"count":1`, false},
	} {
		t.Run(name, func(t *testing.T) {
			err := Check(out, []Expectation{{Line: 7, Text: c.text, re: compileExpectation(c.text)}})
			if c.ok {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, "line 7 expects")
			}
		})
	}
	t.Run("in the block's order", func(t *testing.T) {
		e := func(s string) Expectation { return Expectation{Text: s, re: compileExpectation(s)} }
		require.NoError(t, Check(out, []Expectation{e(`"query_id"`), e(`"ack_result"`)}))
		require.Error(t, Check(out, []Expectation{e(`"ack_result"`), e(`"query_id"`)}))
	})
}
