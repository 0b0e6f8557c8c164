package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"
)

// RequestTimeout bounds every non-long-poll request of every driver (the clients use 30 s,
// spec 0.2).
const RequestTimeout = 30 * time.Second

// HTTPDriver speaks the Queen v1 HTTP API through one fasthttp HostClient: keep-alive
// connections, no pipelining, at most one connection per worker.
type HTTPDriver struct {
	target string
	host   string
	runID  string
	hc     *fasthttp.HostClient
	queues []string
	parts  []string
	// authorization is the Authorization header of every request; nil = none.
	authorization []byte
}

// bearerHeader is the Authorization value for a token, nil for none.
func bearerHeader(token string) []byte {
	if token == "" {
		return nil
	}
	return []byte("Bearer " + token)
}

// NewHTTPDriver connects to rawURL (http://host:port) with up to conns connections. dial,
// when not nil, replaces the TCP dialer (tests use an in-memory listener).
func NewHTTPDriver(rawURL string, conns int, dial fasthttp.DialFunc) (*HTTPDriver, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("--url %q (want http://host:port): %w", rawURL, ErrConfig)
	}
	addr := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			addr = net.JoinHostPort(u.Hostname(), "443")
		} else {
			addr = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	return &HTTPDriver{
		target: rawURL,
		host:   u.Host,
		hc: &fasthttp.HostClient{
			Addr:                          addr,
			IsTLS:                         u.Scheme == "https",
			Dial:                          dial,
			MaxConns:                      conns,
			MaxConnWaitTimeout:            RequestTimeout,
			MaxIdleConnDuration:           time.Minute,
			NoDefaultUserAgentHeader:      true,
			DisableHeaderNamesNormalizing: true,
			DisablePathNormalizing:        true,
		},
	}, nil
}

func (d *HTTPDriver) Name() string   { return DriverComb }
func (d *HTTPDriver) Target() string { return d.target }
func (d *HTTPDriver) Close() error   { d.hc.CloseIdleConnections(); return nil }

// Setup names things: queues, partitions and groups are created by the server on first use
// (spec 1.3, 3.7). With t.RetentionSeconds it configures each queue first (POST
// /api/v1/configure, spec 2: a full replace, so every other option is the default); an
// answer other than 200 is a *StatusError (ErrHTTPStatus).
func (d *HTTPDriver) Setup(_ context.Context, t Topology) error {
	d.runID = t.RunID
	d.queues = make([]string, t.Queues)
	for i := range d.queues {
		d.queues[i] = QueueName(t.RunID, i)
	}
	d.parts = make([]string, t.Partitions)
	for i := range d.parts {
		d.parts[i] = PartitionName(i)
	}
	if t.RetentionSeconds > 0 {
		for _, q := range d.queues {
			if err := d.configureRetention(q, t.RetentionSeconds); err != nil {
				return err
			}
		}
	}
	return nil
}

// configureRetention sets queue q's retentionEnabled and retentionSeconds (seconds), through
// a worker's request like every other call (a status other than 200 is a *StatusError).
func (d *HTTPDriver) configureRetention(q string, seconds int) error {
	type options struct {
		RetentionEnabled bool `json:"retentionEnabled"`
		RetentionSeconds int  `json:"retentionSeconds"`
	}
	body, err := json.Marshal(struct {
		Queue   string  `json:"queue"`
		Options options `json:"options"`
	}{q, options{true, seconds}})
	if err != nil {
		return fmt.Errorf("configure %s: %w", q, err)
	}
	w := &httpWorker{d: d, req: fasthttp.AcquireRequest(), resp: fasthttp.AcquireResponse()}
	defer w.Close()
	if err := w.do(OpConfigure, fasthttp.MethodPost, []byte("/api/v1/configure"), body, RequestTimeout); err != nil {
		return fmt.Errorf("configure %s: %w", q, err)
	}
	if w.resp.StatusCode() != fasthttp.StatusOK {
		return fmt.Errorf("configure %s: %w", q, w.statusErr(OpConfigure))
	}
	return nil
}

// NewWorker returns a worker with its own request, response, buffers and parser.
func (d *HTTPDriver) NewWorker(id int) (Worker, error) {
	return &httpWorker{
		d:        d,
		req:      fasthttp.AcquireRequest(),
		resp:     fasthttp.AcquireResponse(),
		txPrefix: d.runID + "-w" + strconv.Itoa(id),
	}, nil
}

type httpWorker struct {
	d        *HTTPDriver
	req      *fasthttp.Request
	resp     *fasthttp.Response
	body     []byte
	uri      []byte
	parser   fastjson.Parser
	txPrefix string
	seq      uint64
	batch    PoppedBatch
}

func (w *httpWorker) do(op Op, method string, uri []byte, body []byte, timeout time.Duration) error {
	w.req.Reset()
	w.resp.Reset()
	w.req.Header.SetMethod(method)
	w.req.SetRequestURIBytes(uri)
	w.req.Header.SetHost(w.d.host)
	if w.d.authorization != nil {
		w.req.Header.SetBytesV("Authorization", w.d.authorization)
	}
	if body != nil {
		w.req.Header.SetContentTypeBytes([]byte("application/json"))
		w.req.SetBodyRaw(body)
	}
	if err := w.d.hc.DoDeadline(w.req, w.resp, time.Now().Add(timeout)); err != nil {
		return fmt.Errorf("%s %s: %w", method, op, err)
	}
	return nil
}

func (w *httpWorker) statusErr(op Op) error {
	b := w.resp.Body()
	if len(b) > 200 {
		b = b[:200]
	}
	return &StatusError{Op: op, Status: w.resp.StatusCode(), Body: string(b)}
}

// Push sends one POST /api/v1/push; success is 201 (spec 1.6).
func (w *httpWorker) Push(_ context.Context, dst Dest, payload []byte, n int) (int, error) {
	w.body = AppendPushBody(w.body[:0], w.d.queues[dst.Queue], w.d.parts[dst.Partition], w.txPrefix, w.seq, payload, n)
	w.seq += uint64(n)
	w.uri = append(w.uri[:0], "/api/v1/push"...)
	if err := w.do(OpPush, fasthttp.MethodPost, w.uri, w.body, RequestTimeout); err != nil {
		return 0, err
	}
	if sc := w.resp.StatusCode(); sc != fasthttp.StatusCreated && sc != fasthttp.StatusOK {
		return 0, w.statusErr(OpPush)
	}
	return CountPushFailures(&w.parser, w.resp.Body())
}

// Pop sends one wildcard GET /api/v1/pop/queue/:queue; 204 is an empty batch (spec 3.4).
func (w *httpWorker) Pop(_ context.Context, s Source) (Batch, error) {
	waitMs := int(s.Wait / time.Millisecond)
	w.uri = AppendPopURI(w.uri[:0], w.d.queues[s.Queue], s.Group, s.Max, waitMs)
	if err := w.do(OpPop, fasthttp.MethodGet, w.uri, nil, RequestTimeout+s.Wait); err != nil {
		return nil, err
	}
	switch w.resp.StatusCode() {
	case fasthttp.StatusNoContent:
		w.batch.n = 0
		return &w.batch, nil
	case fasthttp.StatusOK:
		if err := ParsePop(&w.parser, w.resp.Body(), s.Group, s.WantTimes, &w.batch); err != nil {
			return nil, err
		}
		return &w.batch, nil
	default:
		return nil, w.statusErr(OpPop)
	}
}

// Ack sends one POST /api/v1/ack/batch for the whole batch.
func (w *httpWorker) Ack(_ context.Context, b Batch) (int, error) {
	pb, ok := b.(*PoppedBatch)
	if !ok || pb.Len() == 0 {
		return 0, nil
	}
	w.uri = append(w.uri[:0], "/api/v1/ack/batch"...)
	if err := w.do(OpAck, fasthttp.MethodPost, w.uri, pb.AckBody(), RequestTimeout); err != nil {
		return 0, err
	}
	if w.resp.StatusCode() != fasthttp.StatusOK {
		return 0, w.statusErr(OpAck)
	}
	return CountAckFailures(&w.parser, w.resp.Body())
}

func (w *httpWorker) Close() error {
	fasthttp.ReleaseRequest(w.req)
	fasthttp.ReleaseResponse(w.resp)
	return nil
}
