package main

import (
	"net"
	"strconv"

	"github.com/rs/zerolog"
)

// dashboardURL is the address a browser on this machine opens for the dashboard served at / on
// the listener at a: a wildcard listener (0.0.0.0, ::) is reached at 127.0.0.1.
func dashboardURL(a net.Addr, tls bool) string {
	scheme := "http"
	if tls {
		scheme = "https"
	}
	host, port := "127.0.0.1", ""
	if tcp, ok := a.(*net.TCPAddr); ok {
		port = strconv.Itoa(tcp.Port)
		if tcp.IP != nil && !tcp.IP.IsUnspecified() {
			host = tcp.IP.String()
		}
	} else if h, p, err := net.SplitHostPort(a.String()); err == nil {
		host, port = h, p
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/"
}

// logDashboard says where the dashboard and the Prometheus metrics are, the two addresses an
// operator looks for first (issue 25).
func logDashboard(log zerolog.Logger, a net.Addr, tls bool, uiDir string) {
	u := dashboardURL(a, tls)
	ev := log.Info().Str("dashboard", u).Str("metrics", u+"metrics/prometheus")
	if uiDir != "" {
		ev = ev.Str("ui_dir", uiDir)
	}
	ev.Msg("dashboard at " + u)
}
