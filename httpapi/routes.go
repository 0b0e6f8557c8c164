package httpapi

import (
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/auth"
)

// Shorthands of the route table's auth column (spec route table, 9.1).
const (
	pub = auth.Public
	ro  = auth.ReadOnly
	rw  = auth.ReadWrite
	ad  = auth.Admin
)

// unlistedLevel is the level of a request no route matches (spec 9.1: "anything unlisted =
// RW"): without a read-write token it is 401/403, with one it is 404.
const unlistedLevel = auth.ReadWrite

// routes is every route comb serves, with the level its caller's token needs when JWT auth is
// on (spec route table and 9.1 "Rules of thumb"; Queen's get_route_access_level). It is the one
// place to read and review them: TestRouteTableLevels walks it against the spec's table, and a
// route with no level (auth.Unset) does not pass that test, so none can ship unclassified.
//
// Patterns are matched on the raw path split on '/', so a percent-encoded '/' stays inside its
// segment (spec 0.3, 11 #31); ":name" segments are parameters, percent-decoded before the
// handler runs; earlier entries win (the literal /consumer-groups/lagging before /:group).
// A path that matches with another method is 404, as an unknown path is (spec 0.1).
var routes = []route{
	{"OPTIONS", "*", pub, func(s *Server, r *request) { r.ctx.SetStatusCode(fasthttp.StatusNoContent) }}, // CORS preflight, spec 0.1
	{"GET", "/health", pub, func(s *Server, r *request) { s.health(r.ctx) }},
	{"GET", "/metrics", pub, func(s *Server, r *request) { s.metricsJSON(r.ctx) }},
	{"GET", "/metrics/prometheus", pub, func(s *Server, r *request) { s.metricsPrometheus(r.ctx) }},

	{"POST", "/api/v1/push", rw, func(s *Server, r *request) { s.pushRequests.Add(1); s.push(r.ctx, r.sub) }},
	{"POST", "/api/v1/configure", rw, func(s *Server, r *request) { s.configure(r.ctx) }},
	{"GET", "/api/v1/pop", rw, func(s *Server, r *request) { s.popRequests.Add(1); s.popDiscovery(r.ctx) }},
	{"GET", "/api/v1/pop/queue/:queue", rw, func(s *Server, r *request) {
		s.popRequests.Add(1)
		if q, ok := r.param(0); ok {
			s.popQueue(r.ctx, q, "", false)
		}
	}},
	{"GET", "/api/v1/pop/queue/:queue/partition/:partition", rw, func(s *Server, r *request) {
		s.popRequests.Add(1)
		if q, p, ok := r.params2(); ok {
			s.popQueue(r.ctx, q, p, true)
		}
	}},
	{"POST", "/api/v1/ack", rw, func(s *Server, r *request) { s.ackRequests.Add(1); s.ackOne(r.ctx) }},
	{"POST", "/api/v1/ack/batch", rw, func(s *Server, r *request) { s.ackRequests.Add(1); s.ackBatch(r.ctx) }},
	{"POST", "/api/v1/transaction", rw, func(s *Server, r *request) { s.transaction(r.ctx, r.sub) }},
	{"POST", "/api/v1/lease/:leaseId/extend", rw, func(s *Server, r *request) {
		if id, ok := r.param(0); ok {
			s.extendLease(r.ctx, id)
		}
	}},

	// Streams (spec 10, RW; streams.go) and comb's read-side list of their queries.
	{"POST", "/streams/v1/queries", rw, func(s *Server, r *request) { s.streamRegister(r.ctx) }},
	{"POST", "/streams/v1/cycle", rw, func(s *Server, r *request) { s.streamCycle(r.ctx, r.sub) }},
	{"POST", "/streams/v1/state/get", rw, func(s *Server, r *request) { s.streamState(r.ctx) }},
	{"GET", "/api/v1/streams/queries", ro, func(s *Server, r *request) { s.streamQueries(r.ctx) }},

	// Membership of a replicated cluster (comb's own; cluster.go).
	// The data directory, disk and flush figures of the dashboard's System view (comb's own; storage.go).
	{"GET", "/api/v1/storage", ro, func(s *Server, r *request) { s.storage(r.ctx) }},
	{"GET", "/api/v1/cluster", ro, func(s *Server, r *request) { s.clusterInfo(r.ctx) }},
	{"POST", "/api/v1/cluster/members", ad, func(s *Server, r *request) { s.addMember(r.ctx) }},
	{"DELETE", "/api/v1/cluster/members/:id", ad, func(s *Server, r *request) {
		if id, ok := r.param(0); ok {
			s.removeMember(r.ctx, id)
		}
	}},

	{"GET", "/api/v1/consumer-groups", ro, func(s *Server, r *request) { s.listGroups(r.ctx) }},
	{"GET", "/api/v1/consumer-groups/lagging", ro, func(s *Server, r *request) { s.laggingGroups(r.ctx) }},
	{"GET", "/api/v1/consumer-groups/:group", ro, func(s *Server, r *request) {
		if g, ok := r.param(0); ok {
			s.groupDetail(r.ctx, g)
		}
	}},
	{"POST", "/api/v1/consumer-groups/:group/subscription", rw, func(s *Server, r *request) {
		if g, ok := r.param(0); ok {
			s.setSubscription(r.ctx, g)
		}
	}},
	{"DELETE", "/api/v1/consumer-groups/:group", ad, func(s *Server, r *request) {
		if g, ok := r.param(0); ok {
			s.deleteGroup(r.ctx, g, "")
		}
	}},
	{"DELETE", "/api/v1/consumer-groups/:group/queues/:queue", ad, func(s *Server, r *request) {
		if g, q, ok := r.params2(); ok {
			s.deleteGroup(r.ctx, g, q)
		}
	}},
	{"POST", "/api/v1/consumer-groups/:group/queues/:queue/seek", rw, func(s *Server, r *request) {
		if g, q, ok := r.params2(); ok {
			s.seek(r.ctx, g, q)
		}
	}},
	{"POST", "/api/v1/consumer-groups/:group/queues/:queue/partitions/:partition/seek", rw, func(s *Server, r *request) {
		g, q, ok := r.params2()
		if !ok {
			return
		}
		if p, ok := r.param(2); ok {
			s.seekPartition(r.ctx, g, q, p)
		}
	}},
	{"POST", "/api/v1/stats/refresh", ad, func(s *Server, r *request) { s.statsRefresh(r.ctx) }},

	{"DELETE", "/api/v1/resources/queues/:queue", ad, func(s *Server, r *request) {
		if q, ok := r.param(0); ok {
			s.deleteQueue(r.ctx, q)
		}
	}},
	{"GET", "/api/v1/resources/overview", ro, func(s *Server, r *request) { s.resourcesOverview(r.ctx) }},
	{"GET", "/api/v1/resources/queues", ro, func(s *Server, r *request) { s.resourceQueues(r.ctx) }},
	{"GET", "/api/v1/resources/queues/:queue", ro, func(s *Server, r *request) {
		if q, ok := r.param(0); ok {
			s.resourceQueue(r.ctx, q)
		}
	}},
	{"GET", "/api/v1/resources/namespaces", ro, func(s *Server, r *request) {
		s.resourceLabels(r.ctx, "namespaces", "namespace", s.rep.ResourceNamespaces())
	}},
	{"GET", "/api/v1/resources/tasks", ro, func(s *Server, r *request) {
		s.resourceLabels(r.ctx, "tasks", "task", s.rep.ResourceTasks())
	}},
	{"GET", "/api/v1/dlq", ro, func(s *Server, r *request) { s.dlq(r.ctx) }},

	{"GET", "/api/v1/messages", ro, func(s *Server, r *request) { s.messages(r.ctx) }},
	{"GET", "/api/v1/messages/:partitionId/:transactionId", ro, func(s *Server, r *request) {
		if pid, tx, ok := r.params2(); ok {
			s.message(r.ctx, pid, tx)
		}
	}},
	{"DELETE", "/api/v1/messages/:partitionId/:transactionId", rw, func(s *Server, r *request) {
		if pid, tx, ok := r.params2(); ok {
			s.deleteMessage(r.ctx, pid, tx)
		}
	}},
	{"POST", "/api/v1/traces", rw, func(s *Server, r *request) { s.addTrace(r.ctx) }},
	{"GET", "/api/v1/traces/names", ro, func(s *Server, r *request) { s.traceNames(r.ctx) }},
	{"GET", "/api/v1/traces/by-name/:traceName", ro, func(s *Server, r *request) { // before :partitionId/:transactionId
		if name, ok := r.param(0); ok {
			s.tracesByName(r.ctx, name)
		}
	}},
	{"GET", "/api/v1/traces/:partitionId/:transactionId", ro, func(s *Server, r *request) {
		if pid, tx, ok := r.params2(); ok {
			s.traces(r.ctx, pid, tx)
		}
	}},
	// Status and analytics (spec 8.7, 8.10): status.go, analytics.go.
	{"GET", "/api/v1/status", ro, func(s *Server, r *request) { s.status(r.ctx) }},
	{"GET", "/api/v1/status/queues", ro, func(s *Server, r *request) { s.statusQueues(r.ctx) }},
	{"GET", "/api/v1/status/queues/:queue", ro, func(s *Server, r *request) {
		if q, ok := r.param(0); ok {
			s.statusQueue(r.ctx, q)
		}
	}},
	{"GET", "/api/v1/status/queues/:queue/messages", ro, func(s *Server, r *request) {
		if q, ok := r.param(0); ok {
			s.statusQueueMessages(r.ctx, q)
		}
	}},
	{"GET", "/api/v1/status/analytics", ro, func(s *Server, r *request) { s.statusAnalytics(r.ctx) }},
	{"GET", "/api/v1/status/buffers", ro, func(s *Server, r *request) { s.statusBuffers(r.ctx) }},
	{"GET", "/api/v1/analytics/worker-metrics", ro, func(s *Server, r *request) { s.workerMetrics(r.ctx) }},
	{"GET", "/api/v1/analytics/queue-ops", ro, func(s *Server, r *request) { s.queueOps(r.ctx) }},
	{"GET", "/api/v1/analytics/queue-lag", ro, func(s *Server, r *request) { s.queueLag(r.ctx) }},
	{"GET", "/api/v1/analytics/system-metrics", ro, func(s *Server, r *request) { s.emptySeries(r.ctx, "replicas") }},
	{"GET", "/api/v1/analytics/retention", ro, func(s *Server, r *request) { s.emptySeries(r.ctx, "series") }},
	{"GET", "/api/v1/analytics/queue-parked-replicas", ro, func(s *Server, r *request) { s.emptySeries(r.ctx, "series", "replicas") }},
	{"GET", "/api/v1/analytics/postgres-stats", ro, func(s *Server, r *request) { notSupported(r.ctx) }},
	{"GET", "/api/v1/migration/:op", ad, func(s *Server, r *request) {
		if op, ok := r.param(0); ok {
			s.migration(r.ctx, op, false)
		}
	}},
	{"POST", "/api/v1/migration/:op", ad, func(s *Server, r *request) {
		if op, ok := r.param(0); ok {
			s.migration(r.ctx, op, true)
		}
	}},

	{"GET", "/api/v1/system/maintenance", ad, func(s *Server, r *request) { s.maintenance(r.ctx, false, false) }},
	{"POST", "/api/v1/system/maintenance", ad, func(s *Server, r *request) { s.maintenance(r.ctx, true, false) }},
	{"GET", "/api/v1/system/maintenance/pop", ad, func(s *Server, r *request) { s.maintenance(r.ctx, false, true) }},
	{"POST", "/api/v1/system/maintenance/pop", ad, func(s *Server, r *request) { s.maintenance(r.ctx, true, true) }},
}

// route is one row of the table.
type route struct {
	method  string
	pattern string     // "/api/v1/pop/queue/:queue"; "*" matches every path
	level   auth.Level // what the caller's token needs (spec 9.1)
	serve   func(s *Server, r *request)
}

// request is one routed request: its context, the raw (still percent-encoded) path parameters
// in pattern order, and the `sub` of its token ("" when auth is off or the token has none).
type request struct {
	ctx *fasthttp.RequestCtx
	raw [maxParams][]byte
	sub string
}

// maxParams is more than the most parameters of a pattern (the partition seek has 3).
const maxParams = 4

// param percent-decodes parameter i, answering 400 itself for a malformed escape.
func (r *request) param(i int) (string, bool) {
	return pathParams{r.ctx}.decode(r.raw[i])
}

// params2 decodes parameters 0 and 1.
func (r *request) params2() (string, string, bool) {
	a, ok := r.param(0)
	if !ok {
		return "", "", false
	}
	b, ok := r.param(1)
	return a, b, ok
}

// compiledRoute is a route split into segments; param marks the ":name" ones.
type compiledRoute struct {
	*route
	segs  []string
	param []bool
	any   bool // pattern "*"
}

// table is routes compiled, indexed by segment count for the matcher.
var table = compileRoutes(routes)

type routeTable struct {
	bySegs [maxSegments + 1][]compiledRoute
	any    []compiledRoute
}

func compileRoutes(rs []route) *routeTable {
	t := &routeTable{}
	for i := range rs {
		r := &rs[i]
		if r.pattern == "*" {
			t.any = append(t.any, compiledRoute{route: r, any: true})
			continue
		}
		segs := strings.Split(strings.TrimPrefix(r.pattern, "/"), "/")
		c := compiledRoute{route: r, segs: segs, param: make([]bool, len(segs))}
		for j, s := range segs {
			c.param[j] = strings.HasPrefix(s, ":")
		}
		if len(segs) > maxSegments {
			panic("httpapi: route pattern with too many segments: " + r.pattern)
		}
		t.bySegs[len(segs)] = append(t.bySegs[len(segs)], c)
	}
	return t
}

// match returns the route of (method, raw path) and fills req's parameters; nil when none.
func (t *routeTable) match(method []byte, path []byte, req *request) *route {
	for i := range t.any {
		if string(method) == t.any[i].method {
			return t.any[i].route
		}
	}
	var arr [maxSegments][]byte
	segs, ok := splitPath(path, arr[:0])
	if !ok {
		return nil
	}
next:
	for i := range t.bySegs[len(segs)] {
		c := &t.bySegs[len(segs)][i]
		if string(method) != c.method {
			continue
		}
		n := 0
		for j, seg := range segs {
			if c.param[j] {
				req.raw[n] = seg
				n++
			} else if string(seg) != c.segs[j] {
				continue next
			}
		}
		return c.route
	}
	return nil
}
