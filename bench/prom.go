package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultSyncMetric is the series of comb's /metrics/prometheus (spec 8.3) that counts the
// broker's group-commit syncs: the _count of its sync-latency histogram, one per fdatasync
// a push or a commit issues itself and one per shared sync pass. It is how a run reports
// syncs per request without touching the server (/proc/<pid>/io has no sync count, and
// tracing every fdatasync would slow the server it measures).
const DefaultSyncMetric = "comb_sync_latency_seconds_count"

// scrapeTimeout bounds one read of /metrics/prometheus at a window's edge.
const scrapeTimeout = 5 * time.Second

// maxScrapeBytes caps the exposition read: comb's is a few KB; a server that sends more is not
// the one this reader was written for.
const maxScrapeBytes = 4 << 20

// ScrapeSample reads the value of one series from the Prometheus text exposition (format
// 0.0.4) at baseURL + "/metrics/prometheus". series is matched as the server writes it: a bare
// name, or a name with its labels exactly as exposed (`queen_cluster_push_requests_total{scope="cluster"}`).
// token, when not empty, is sent as a Bearer token. Errors wrap ErrHTTPStatus for a non-200
// answer and ErrBadResponse when the series is absent or its value unreadable.
func ScrapeSample(ctx context.Context, client *http.Client, baseURL, token, series string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(baseURL, "/")+"/metrics/prometheus", nil)
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", series, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape %s: %w", series, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxScrapeBytes))
	if err != nil {
		return 0, fmt.Errorf("scrape %s: read body: %w", series, err)
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("scrape %s: HTTP %d: %w", series, resp.StatusCode, ErrHTTPStatus)
	}
	v, ok := promSample(body, series)
	if !ok {
		return 0, fmt.Errorf("scrape %s: series not exposed or not a number: %w", series, ErrBadResponse)
	}
	return v, nil
}

// promSample finds the sample line of series in a text exposition: the series, one or more
// blanks, the value, optionally a timestamp. Comment lines (# HELP, # TYPE) never match.
// Values use Go's float syntax, which covers the format's +Inf and -Inf; a NaN reads as
// absent, since the caller takes the difference of two samples.
func promSample(body []byte, series string) (float64, bool) {
	if series == "" {
		return 0, false
	}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 4096), maxScrapeBytes)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		rest, found := strings.CutPrefix(line, series)
		if !found || rest == "" || (rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 || len(f) > 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil || math.IsNaN(v) {
			continue
		}
		return v, true
	}
	return 0, false
}
