package httpapi

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"time"
)

// Plain HTTP sent to the TLS port used to get an empty reply: the TLS handshake failed on the
// first bytes and the connection closed (issue 25). As net/http does, a connection whose first
// byte is an HTTP method's first letter rather than a TLS handshake record is answered 400 with
// a hint, in plain text the client can read, and closed.

// plainOnTLSBody is the 400's body.
const plainOnTLSBody = `{"error":"This port serves HTTPS: the client sent plain HTTP. Use https:// in the URL (curl: https://..., with --cacert for a private CA)"}`

var plainOnTLSAnswer = []byte("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
	strconv.Itoa(len(plainOnTLSBody)) + "\r\n\r\n" + plainOnTLSBody)

// errPlainHTTPOnTLS ends the TLS handshake of a plain HTTP connection (already answered).
var errPlainHTTPOnTLS = errors.New("plain HTTP on the TLS port (answered 400)")

// plainHTTPGuard wraps the listener below tls.NewListener.
type plainHTTPGuard struct{ net.Listener }

func (l plainHTTPGuard) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &sniffConn{Conn: c}, nil
}

// sniffConn checks the first bytes the TLS layer reads; it never reads ahead of it, so Accept
// does not wait on a slow client and nothing is buffered.
type sniffConn struct {
	net.Conn
	checked bool
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.checked || n == 0 {
		return n, err
	}
	c.checked = true
	// 0x16 opens a TLS handshake record; HTTP methods start with an upper-case letter.
	if b := p[0]; b >= 'A' && b <= 'Z' {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, _ = c.Conn.Write(plainOnTLSAnswer)
		return 0, errPlainHTTPOnTLS
	}
	return n, err
}

// SyscallConn exposes the socket underneath, for the long-poll disconnect watch
// (disconnect.go), which peeks at it under the TLS session.
func (c *sniffConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("connection without a socket")
	}
	return sc.SyscallConn()
}
