// Package httpapi serves the Queen MQ v1 HTTP API (spec /shared/spec/http-api.md) on fasthttp.
//
// It owns the wire: routing, percent-decoding of path parameters, query-string defaults
// (spec 0.3, 3.2), request parsing and validation (the spec's exact 400 messages), response
// encoding (field names, snake_case/camelCase mix, nulls, `[]` for empty arrays), status codes,
// CORS (spec 0.1), the bodiless pop 204 (seed 000), the 413 body cap, per-request panic
// recovery, and the JSON and Prometheus metrics views. It also owns the limits on hostile input
// that the wire can enforce (issue 10): the connection cap answered 503 and the accept loop that
// survives running out of file descriptors (listener.go), UTF-8 payloads, label lengths, the cap
// on an ack's error text, and integer lease-extend seconds.
//
// Security (issue 11): every route is a row of the table in routes.go with the auth level its
// caller's token needs (spec 9.1); dispatch checks the Authorization header against it with
// package auth before the handler runs, answers Queen's refusal bodies, and hands the token's
// `sub` to /push and /transaction, which stamp it as producerSub (spec 1.5, 11 #45). A message
// the broker could not decrypt is encoded with "data": null and "decryptionError" (spec 9.2).
// Config.TLS serves HTTPS on the same listener (tls.go: a certificate reloadable on SIGHUP).
//
// Replication (issue 15): on a node of a replicated cluster (Config.Cluster) that does not lead,
// dispatch forwards every request but the node's own to the leader's announced HTTP address and
// relays the answer, or answers 503 with Retry-After when it cannot (forward.go).
//
// It must not know how messages are stored, how cursors move or what a lease is: every rule of
// spec sections 1-8 lives behind the Backend interface (satisfied by *broker.Broker). The only
// broker knowledge here is the request/result types of broker/api.go and its sentinel errors.
//
// Speed (shared/design/performance.md): push bodies are decoded with goccy/go-json into structs
// whose payload is a json.RawMessage (the decoder validates the payload's syntax and hands us
// our own copy, so the stored bytes are exactly the pushed bytes; one utf8.Valid pass adds the
// UTF-8 check the decoder does not make); ack bodies are parsed with
// valyala/fastjson over one string copy of the body; every response is appended into a pooled
// []byte and handed to fasthttp with Response.SwapBody; the per-message createdAt is formatted
// once per distinct segment timestamp.
package httpapi
