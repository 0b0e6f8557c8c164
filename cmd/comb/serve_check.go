package main

import (
	"fmt"
	"strconv"
	"time"
)

// checkServeValues refuses serve's values that parse but mean nothing, before anything is
// opened: the broker would otherwise read them as "the default" without a word (a negative
// --max-batch became 10000, issue 25). It returns the one-line problem, or "".
func checkServeValues(syncMode string, syncInterval, checkpoint, groupWait, flushInterval time.Duration, maxBatch int) string {
	return firstBadValue([]valueRule{
		{name: "sync", ok: syncMode == "always" || syncMode == "interval" || syncMode == "never",
			got: strconv.Quote(syncMode), want: "want always, interval or never"},
		{name: "sync-interval", ok: syncInterval > 0, got: syncInterval.String(), want: "want a positive duration, like 10ms"},
		{name: "checkpoint-interval", ok: checkpoint > 0, got: checkpoint.String(), want: "want a positive duration, like 5ms"},
		{name: "group-commit-wait", ok: groupWait >= 0, got: groupWait.String(), want: "want 0 (off) or a positive duration, like 200us"},
		{name: "flush-interval", ok: flushInterval > 0, got: flushInterval.String(), want: "want a positive duration, like 30s"},
		{name: "max-batch", ok: maxBatch >= 1, got: strconv.Itoa(maxBatch), want: fmt.Sprintf("want at least 1 message, like %d", 10000)},
	})
}
