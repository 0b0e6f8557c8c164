package httpapi

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/combmq/comb/broker"
)

func TestConfigureEchoesEveryOptionWithItsJSONType(t *testing.T) {
	// spec 2.4: the JS test configureQueue compares all 15 keys (+ minPopWaitTime) exactly.
	fake := newFake()
	ts := startServer(t, fake, Config{})
	r := ts.do("POST", "/api/v1/configure", `{"queue":"orders","namespace":"billing","task":"process-invoice",
	 "options":{"priority":5,"leaseTime":"120","retryLimit":0,"retryDelay":1000.0,"maxSize":0,"ttl":3600,
	 "deadLetterQueue":true,"dlqAfterMaxRetries":"true","delayedProcessing":2,"windowBuffer":3,"retentionSeconds":4,
	 "completedRetentionSeconds":5,"retentionEnabled":true,"encryptionEnabled":false,"maxWaitTimeSeconds":6,
	 "minPopWaitTime":700,"unknownKey":[1]}}`)
	requireJSON(t, r, 200, `{"configured":true,"queueId":"qid","partitionId":"pid","queue":"orders",
	 "namespace":"billing","task":"process-invoice","options":{"priority":5,"leaseTime":120,"retryLimit":0,
	 "retryDelay":1000,"maxSize":0,"ttl":3600,"deadLetterQueue":true,"dlqAfterMaxRetries":true,"delayedProcessing":2,
	 "windowBuffer":3,"retentionSeconds":4,"completedRetentionSeconds":5,"retentionEnabled":true,
	 "encryptionEnabled":false,"maxWaitTimeSeconds":6,"minPopWaitTime":700},
	 "warnings":["unknown option \"unknownKey\" ignored"]}`)
}

// Issue 25: an option name configure does not know is still ignored (spec 2.2; Queen's JS and
// Python clients pass the application's keys through), but the answer names it and the option
// it was probably meant to be; an answer without unknown keys keeps Queen's exact shape.
func TestConfigureWarnsAboutUnknownOptionNames(t *testing.T) {
	fake := newFake()
	ts := startServer(t, fake, Config{})
	r := ts.do("POST", "/api/v1/configure", `{"queue":"q","options":{"leaseTimeout":30,"retry_limit":1,"dlqAfterMaxRetries":true,"colour":"red"}}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Contains(t, string(r.body), `,"warnings":["unknown option \"leaseTimeout\" ignored (did you mean \"leaseTime\"?)","unknown option \"retry_limit\" ignored (did you mean \"retryLimit\"?)","unknown option \"colour\" ignored"]}`)
	require.Equal(t, broker.DefaultQueueOptions().LeaseTime, fake.configReq.Options.LeaseTime, "still ignored")
	require.True(t, fake.configReq.Options.DLQAfterMaxRetries)

	r = ts.do("POST", "/api/v1/configure", `{"queue":"q","options":{"leaseTime":30}}`)
	require.Equal(t, 200, r.status)
	require.NotContains(t, string(r.body), "warnings")
}

func TestConfigureWarnsWhenAnEncryptedQueueIsStoredPlain(t *testing.T) {
	fake := newFake()
	fake.onConfigure = func(req broker.ConfigureRequest) (broker.ConfigureResult, error) {
		return broker.ConfigureResult{QueueID: "qid", PartitionID: "pid", Queue: req.Queue, Options: req.Options, StoredPlain: true}, nil
	}
	ts := startServer(t, fake, Config{})
	r := ts.do("POST", "/api/v1/configure", `{"queue":"q","options":{"encryptionEnabled":true}}`)
	require.Equal(t, 200, r.status)
	require.Equal(t, []any{WarningStoredPlain}, r.json(t).(map[string]any)["warnings"])
}

func TestNearestOption(t *testing.T) {
	for in, want := range map[string]string{
		"leaseTimeout": "leaseTime", "LEASETIME": "leaseTime", "lease_time": "leaseTime", "retrylimit": "retryLimit",
		"dlq": "", "encryption": "", "encryptionEnable": "encryptionEnabled", "ttl_": "ttl", "deadLetterQueues": "deadLetterQueue",
	} {
		require.Equal(t, want, nearestOption(in), in)
	}
}

func TestConfigureIsAWholeReplaceWithDefaults(t *testing.T) {
	// spec 2.1/2.2: options left out take their defaults; null namespace/task are "".
	cases := []struct {
		name, body string
		want       broker.ConfigureRequest
	}{
		{"no options", `{"queue":"q"}`, broker.ConfigureRequest{Queue: "q", Options: broker.DefaultQueueOptions()}},
		{"options not an object are ignored", `{"queue":"q","options":[1],"namespace":null,"task":null}`,
			broker.ConfigureRequest{Queue: "q", Options: broker.DefaultQueueOptions()}},
		{"null option is its default", `{"queue":"q","options":{"leaseTime":null,"retryLimit":1}}`,
			broker.ConfigureRequest{Queue: "q", Options: func() broker.QueueOptions {
				o := broker.DefaultQueueOptions()
				o.RetryLimit = 1
				return o
			}()}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, msg := decodeConfigure([]byte(c.body))
			require.Empty(t, msg)
			require.Equal(t, c.want, got)
		})
	}
}

// spec 2.2: priority may be negative; a negative minPopWaitTime is clamped to 0, not refused.
func TestConfigureSignedOptions(t *testing.T) {
	fake := newFake()
	ts := startServer(t, fake, Config{})
	r := ts.do("POST", "/api/v1/configure", `{"queue":"q","options":{"priority":-2,"minPopWaitTime":-1}}`)
	require.Equal(t, 200, r.status, "%s", r.body)
	require.Equal(t, int64(-2), fake.configReq.Options.Priority)
}

func TestConfigureBadInput(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"empty body", ``, "Empty request body"},
		{"queue missing (spec 2.1)", `{"options":{}}`, "queue is required"},
		{"queue not a string", `{"queue":1}`, "queue is required"},
		{"empty queue", `{"queue":""}`, "Queue name must not be empty"},
		{"queue with NUL", `{"queue":"a\u0000"}`, "Queue name must not contain NUL"},
		{"namespace wrong type", `{"queue":"q","namespace":1}`, "namespace must be a string"},
		{"int option of wrong type (spec 2.2)", `{"queue":"q","options":{"leaseTime":true}}`, "Option leaseTime must be an integer"},
		{"int option non-numeric string", `{"queue":"q","options":{"ttl":"soon"}}`, "Option ttl must be an integer"},
		{"int option fractional", `{"queue":"q","options":{"ttl":1.5}}`, "Option ttl must be an integer"},
		{"bool option of wrong type", `{"queue":"q","options":{"retentionEnabled":1}}`, "Option retentionEnabled must be a boolean"},
		{"negative leaseTime", `{"queue":"q","options":{"leaseTime":-1}}`, "Option leaseTime must not be negative"},
		{"negative retryLimit", `{"queue":"q","options":{"retryLimit":-3}}`, "Option retryLimit must not be negative"},
		{"negative delayedProcessing", `{"queue":"q","options":{"delayedProcessing":-5}}`, "Option delayedProcessing must not be negative"},
		{"negative maxSize", `{"queue":"q","options":{"maxSize":-1}}`, "Option maxSize must not be negative"},
		{"negative retentionSeconds", `{"queue":"q","options":{"retentionSeconds":-1}}`, "Option retentionSeconds must not be negative"},
		{"a duration that overflows µs arithmetic", `{"queue":"q","options":{"windowBuffer":99999999999999}}`, "Option windowBuffer must be at most 1000000000000 in magnitude"},
		{"queue with a slash (spec 0.4)", `{"queue":"a/b"}`, "Queue name must not contain '/'"},
		{"queue not valid UTF-8", "{\"queue\":\"a\xffb\"}", "Queue name must be valid UTF-8"},
		// issue 10: labels get the limits of names (spec 0.4) instead of reaching the journal.
		{"a 2 MiB namespace", `{"queue":"q","namespace":"` + strings.Repeat("n", 2<<20) + `"}`, "namespace must be at most 255 characters"},
		{"a 100 kB task", `{"queue":"q","task":"` + strings.Repeat("t", 100000) + `"}`, "task must be at most 255 characters"},
		{"256 two-byte characters of namespace", `{"queue":"q","namespace":"` + strings.Repeat("é", 256) + `"}`, "namespace must be at most 255 characters"},
		{"task not valid UTF-8", "{\"queue\":\"q\",\"task\":\"a\xffb\"}", "task must be valid UTF-8"},
		{"namespace with NUL", `{"queue":"q","namespace":"a\u0000"}`, "namespace must not contain NUL"},
	}
	fake := newFake()
	ts := startServer(t, fake, Config{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := ts.do("POST", "/api/v1/configure", c.body)
			requireJSON(t, r, 400, `{"error":`+quote(c.want)+`}`)
		})
	}
	require.NotContains(t, fake.callList(), "Configure")
}

// decodeConfigure parses and validates a configure body (spec 2.1, 2.2), without the
// ignored keys (only tests call it).
func decodeConfigure(body []byte) (broker.ConfigureRequest, string) {
	req, _, msg := decodeConfigureWarn(body)
	return req, msg
}
