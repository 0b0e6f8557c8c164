package bench

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// probe samples, at the measured window's two edges, what the client's own counters cannot
// see: the server's CPU and RSS and this process's CPU (/proc/<pid>), the whole host's busy
// CPU (/proc/stat), the load average, and the server's sync counter (its /metrics/prometheus,
// driver comb only). Every figure it cannot read is left out of the report rather than shown
// as zero.
type probe struct {
	cfg        Config
	serverPID  int    // 0 = unknown
	metricsURL string // base URL of a comb server to scrape; "" = none
	client     *http.Client

	cl0, sv0, host0 ProcSample
	svErr, hostErr  error
	syncs0          float64
	syncErr         error
	stopScrapes     func() // ends the periodic scrapes of the window; nil when none run

	// fol0 samples cfg.FollowerPIDs at the window's opening; folErr is the first that failed.
	fol0   []ProcSample
	folErr error
}

// syncScrapeEvery is how often the sync counter is read during the window, values discarded.
// comb before issue 14's histogram rework (c473ac3 and older) drained at most 4,096 sync
// durations into its histogram per read of its stats and dropped the rest, so a window read
// only at its edges undercounts a busy server's syncs; 4,096 per second is above what those
// builds' one fdatasync per push request reached here (~2,500/s). Not more often: one scrape
// walks every partition, ~30 ms of server CPU at 100,000 partitions, and four a second took
// 12 % of the server's CPU in the window it was measuring. Today's server counts every sync
// and does not care.
const syncScrapeEvery = time.Second

// newProbe samples the process serverPID (0 = none) and scrapes cfg.SyncMetric from the comb
// server at metricsURL ("" = none).
func newProbe(cfg Config, serverPID int, metricsURL string) *probe {
	return &probe{cfg: cfg, serverPID: serverPID, metricsURL: metricsURL, client: &http.Client{Timeout: scrapeTimeout}}
}

// open takes the first samples. The scrape goes first so that the /proc samples, which
// measure the window, sit as close to the client counters' snapshot as they can.
func (p *probe) open(ctx context.Context) {
	p.syncs0, p.syncErr = p.scrapeSyncs(ctx)
	if p.syncErr == nil {
		p.stopScrapes = p.scrapePeriodically(ctx)
	}
	p.cl0, _ = ReadProc(0)
	p.host0, p.hostErr = ReadHostCPU()
	p.svErr = ErrNoServerProcess
	if p.serverPID > 0 {
		p.sv0, p.svErr = ReadProc(p.serverPID)
	}
	p.fol0, p.folErr = readProcs(p.cfg.FollowerPIDs)
}

// readProcs samples every pid; the error is the first failed read.
func readProcs(pids []int) ([]ProcSample, error) {
	out := make([]ProcSample, len(pids))
	for i, pid := range pids {
		s, err := ReadProc(pid)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// close takes the second samples and fills res's machine and server figures; requests is the
// number of requests the client completed inside the window.
func (p *probe) close(ctx context.Context, res *Result, requests int64) {
	cl1, _ := ReadProc(0)
	host1, hostErr := ReadHostCPU()
	sv1, svErr := ReadProc(p.serverPID)
	if p.serverPID == 0 {
		svErr = ErrNoServerProcess
	}
	res.ClientCPUPercent = CPUPercent(p.cl0, cl1)
	if p.hostErr == nil && hostErr == nil {
		res.HostCPUPercent = CPUPercent(p.host0, host1)
	}
	if la, err := ReadLoadAvg(); err == nil {
		res.LoadAvg = &la
	}
	if p.svErr == nil && svErr == nil {
		res.ServerPID = p.serverPID
		res.ServerRssBytes = sv1.RSSBytes
		res.ServerPeakRssBytes = sv1.PeakRSSBytes
		res.ServerAnonRssBytes, res.ServerFileRssBytes = sv1.AnonRSSBytes, sv1.FileRSSBytes
		res.ServerCPUPercent = CPUPercent(p.sv0, sv1)
		res.ServerCPUMicrosPerRequest = CPUMicrosPer(p.sv0, sv1, requests)
	}
	if fol1, err := readProcs(p.cfg.FollowerPIDs); len(p.fol0) > 0 && p.folErr == nil && err == nil {
		// Summed over the followers: 100 = one core busy with following.
		var ticks int64
		for i := range fol1 {
			res.FollowerCPUPercent += CPUPercent(p.fol0[i], fol1[i])
			ticks += fol1[i].CPUTicks - p.fol0[i].CPUTicks
		}
		res.FollowerPIDs = append([]int(nil), p.cfg.FollowerPIDs...)
		res.FollowerCPUMicrosPerRequest = CPUMicrosPer(ProcSample{}, ProcSample{CPUTicks: ticks}, requests)
	}
	if p.stopScrapes != nil {
		p.stopScrapes()
	}
	// The scrape runs even when the run was cancelled: the window it closes still happened.
	syncs1, err := p.scrapeSyncs(context.WithoutCancel(ctx))
	if p.syncErr == nil && err == nil && syncs1 >= p.syncs0 {
		n := int64(syncs1 - p.syncs0)
		res.SyncMetric = p.cfg.SyncMetric
		res.ServerSyncs = &n
		if requests > 0 {
			per := float64(n) / float64(requests)
			res.ServerSyncsPerRequest = &per
		}
	}
}

// scrapePeriodically reads the sync counter every syncScrapeEvery until the returned stop is
// called (which waits for a read in flight).
func (p *probe) scrapePeriodically(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(syncScrapeEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_, _ = p.scrapeSyncs(ctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// scrapeSyncs reads the server's sync counter; an error when there is no comb server to
// scrape or the metric is switched off.
func (p *probe) scrapeSyncs(ctx context.Context) (float64, error) {
	if p.metricsURL == "" || p.cfg.SyncMetric == "" {
		return 0, fmt.Errorf("no sync metric to scrape: %w", ErrConfig)
	}
	return ScrapeSample(ctx, p.client, p.metricsURL, p.cfg.Token, p.cfg.SyncMetric)
}
