package fsck

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExitCodes: the documented exit codes follow from the findings' severities
// (docs/operations.md): damage wins, then open repairable findings, then repaired.
func TestExitCodes(t *testing.T) {
	cases := []struct {
		name     string
		findings []Finding
		verdict  Verdict
		code     int
	}{
		{"no findings is clean", nil, "clean", ExitClean},
		{"info only is clean", []Finding{{Severity: SeverityInfo}}, "clean", ExitClean},
		{"an open repairable finding is exit 1", []Finding{{Severity: SeverityRepairable}}, "repairable", ExitRepairable},
		{"everything repaired is exit 1", []Finding{{Severity: SeverityRepairable, Repaired: true}}, "repaired", ExitRepairable},
		{"a failed repair stays repairable", []Finding{{Severity: SeverityRepairable, RepairError: "x"}}, "repairable", ExitRepairable},
		{"damage wins over repairs", []Finding{{Severity: SeverityRepairable, Repaired: true}, {Severity: SeverityDamaged}}, "damaged", ExitDamaged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Findings: tc.findings}
			r.finish()
			assert.Equal(t, tc.verdict, r.Verdict)
			assert.Equal(t, tc.code, r.ExitCode)
		})
	}
}

// TestReportJSONShape: --json is one document with the fields the crash harness
// and operators' scripts read.
func TestReportJSONShape(t *testing.T) {
	r := &Report{Dir: "/d", Mode: ModeCheck, Findings: []Finding{{Kind: KindTornTail, Severity: SeverityRepairable,
		File: "partitions/x/1.seg", StartByte: 10, EndByte: 20, FirstOffset: 5, LastOffset: 6, Detail: "d"}}}
	r.finish()
	var buf bytes.Buffer
	require.NoError(t, r.WriteJSON(&buf))
	var got map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &got))
	assert.EqualValues(t, 1, got["exitCode"])
	assert.Equal(t, "repairable", got["verdict"])

	clean := &Report{Dir: "/d", Mode: ModeCheck}
	clean.finish()
	buf.Reset()
	require.NoError(t, clean.WriteJSON(&buf))
	assert.Contains(t, buf.String(), `"verdict": "clean",`, "the verdict is the same JSON string as before it was a named constant")
	buf.Reset()
	require.NoError(t, clean.WriteText(&buf))
	assert.Contains(t, buf.String(), "\nclean (exit 0)\n")
	f := got["findings"].([]any)[0].(map[string]any)
	assert.Equal(t, "torn_tail", f["kind"])
	assert.EqualValues(t, 10, f["startByte"])
	assert.EqualValues(t, 20, f["endByte"])
	assert.EqualValues(t, 5, f["firstOffset"])

	buf.Reset()
	require.NoError(t, r.WriteText(&buf))
	assert.Contains(t, buf.String(), "partitions/x/1.seg bytes [10,20), offsets 5-6")
	assert.Contains(t, buf.String(), "(exit 1)")
}
