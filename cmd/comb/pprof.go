package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"time"
)

// Sampling rates switched on with --pprof, so that /debug/pprof/block and /debug/pprof/mutex
// have something to show. Off (zero) otherwise: both cost a little on every contended lock.
const (
	pprofBlockRateNanos  = 10_000 // one sample per 10 µs spent blocked
	pprofMutexFraction   = 20     // one contended unlock in 20
	pprofReadHeaderLimit = 10 * time.Second
)

// errPprofNotLoopback refuses a profiling address anyone else could reach: profiles show
// payload bytes on the stack and the endpoints let a caller burn CPU.
var errPprofNotLoopback = errors.New("--pprof must listen on a loopback address (127.0.0.1:PORT, [::1]:PORT or localhost:PORT)")

// checkPprofAddr accepts host:port only when host is a loopback IP or "localhost".
func checkPprofAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--pprof %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--pprof %q: %w", addr, errPprofNotLoopback)
	}
	return nil
}

// startPprof serves net/http/pprof on its own listener (never on the API port) and turns on
// block and mutex sampling. The returned func stops the listener.
func startPprof(addr string) (net.Addr, func(), error) {
	if err := checkPprofAddr(addr); err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	runtime.SetBlockProfileRate(pprofBlockRateNanos)
	runtime.SetMutexProfileFraction(pprofMutexFraction)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: pprofReadHeaderLimit}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr(), func() { _ = srv.Close() }, nil
}
