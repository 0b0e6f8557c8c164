package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

const testKeyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// parseSecurity parses args then env (as runServe does) and builds the security settings.
func parseSecurity(t *testing.T, args []string, env map[string]string) (security, error) {
	t.Helper()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var sf securityFlags
	sf.register(fs)
	if err := fs.Parse(args); err != nil {
		return security{}, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, fe := range securityEnv {
		if v := env[fe[1]]; v != "" && !given[fe[0]] {
			if err := fs.Set(fe[0], v); err != nil {
				return security{}, err
			}
		}
	}
	return sf.build(zerolog.Nop())
}

// issue 11: Queen's environment works unchanged, each variable also a flag, flag first.
func TestSecurityFromQueenEnvironment(t *testing.T) {
	sec, err := parseSecurity(t, nil, map[string]string{"JWT_ENABLED": "true", "JWT_ALGORITHM": "HS256",
		"JWT_SECRET": "s3cret", "JWT_CLOCK_SKEW": "5", "QUEEN_ENCRYPTION_KEY": testKeyHex})
	require.NoError(t, err)
	require.True(t, sec.auth.Enabled())
	require.NotNil(t, sec.keys)
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "a", "role": "read-only",
		"exp": time.Now().Add(-10 * time.Second).Unix()}).SignedString([]byte("s3cret"))
	require.NoError(t, err)
	_, aerr := sec.auth.Verify([]byte(tok))
	require.Equal(t, "Token has expired", aerr.Message, "JWT_CLOCK_SKEW=5 is seconds: 10 s past exp is expired")

	sec, err = parseSecurity(t, []string{"--jwt-enabled=false"}, map[string]string{"JWT_ENABLED": "true"})
	require.NoError(t, err, "the flag wins over the environment")
	require.Nil(t, sec.auth)
}

// issue 11: refuse to start on a configuration that cannot verify anything, and on settings
// that are set but wrong (a malformed encryption key must not silently mean plaintext).
func TestSecurityRefusals(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"HS256 without a secret", nil, map[string]string{"JWT_ENABLED": "true"}, "JWT_SECRET is empty"},
		{"not a boolean", nil, map[string]string{"JWT_ENABLED": "yes"}, "parse error"},
		{"unknown algorithm", []string{"--jwt-enabled", "--jwt-algorithm", "none", "--jwt-secret", "x"}, nil, `JWT_ALGORITHM "none"`},
		{"malformed key", nil, map[string]string{"QUEEN_ENCRYPTION_KEY": "abc"}, "want 64 hex characters"},
		{"previous keys alone", []string{"--encryption-previous-keys", testKeyHex}, nil, "without --encryption-key"},
		{"bad previous key", []string{"--encryption-key", testKeyHex, "--encryption-previous-keys", "zz"}, nil, "previous key 1"},
		{"cert without key", []string{"--tls-cert", "c.pem"}, nil, "go together"},
		{"missing cert files", []string{"--tls-cert", "/nonexistent/c.pem", "--tls-key", "/nonexistent/k.pem"}, nil, "no such file"},
		{"public key file missing", []string{"--jwt-enabled", "--jwt-algorithm", "RS256", "--jwt-public-key", "/nonexistent.pem"}, nil, "neither PEM text nor a readable file"},
		{"bad clock skew", []string{"--jwt-clock-skew", "soon"}, nil, "want a number of seconds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseSecurity(t, c.args, c.env)
			require.ErrorContains(t, err, c.want)
		})
	}
	var code int
	out := captureStderr(t, func() {
		code = runServe([]string{"--addr", freeAddr(t), "--data-dir", t.TempDir(), "--jwt-enabled"})
	})
	require.Equal(t, 2, code, "comb serve exits 2 before opening anything")
	require.Contains(t, out, "JWT_SECRET is empty")
}

func TestUnitDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"30": 30 * time.Second, "0": 0, "1m": time.Minute, " 45 ": 45 * time.Second, "1500ms": 1500 * time.Millisecond} {
		u := unitDuration{unit: time.Second}
		require.NoError(t, u.Set(in), in)
		require.Equal(t, want, u.d, in)
	}
	for _, in := range []string{"-1", "abc", "-5s", "100000"} {
		u := unitDuration{unit: time.Second}
		require.Error(t, u.Set(in), in)
	}
	ms := unitDuration{unit: time.Millisecond}
	require.NoError(t, ms.Set("5000"))
	require.Equal(t, 5*time.Second, ms.d, "JWT_JWKS_TIMEOUT_MS is milliseconds")
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:1": true, "[::1]:1": true, "0.0.0.0:1": false, "[::]:1": false, "10.1.2.3:1": false} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		require.NoError(t, err)
		require.Equal(t, want, isLoopback(a), addr)
	}
}

// End to end: comb serve with auth from the environment and TLS from flags, over HTTPS; a
// push without a token is 401, with one 201; SIGHUP reloads the certificate.
func TestServeWithAuthAndTLS(t *testing.T) {
	dir, certDir := filepath.Join(t.TempDir(), "data"), t.TempDir()
	certFile, keyFile, pool := writeTestCert(t, certDir, 1)
	addr := freeAddr(t)
	t.Setenv("JWT_ENABLED", "true")
	t.Setenv("JWT_SECRET", "s3cret")
	exited := make(chan int, 1)
	go func() {
		exited <- runServe([]string{"--addr", addr, "--data-dir", dir, "--sync", "never", "--log-level", "error",
			"--tls-cert", certFile, "--tls-key", keyFile})
	}()
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := client.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			require.Equal(t, 200, resp.StatusCode, "/health is public")
			break
		}
		require.True(t, time.Now().Before(deadline), "server did not come up: %v", err)
		select {
		case code := <-exited:
			t.Fatalf("comb serve exited with %d", code)
		case <-time.After(10 * time.Millisecond):
		}
	}
	body := `{"items":[{"queue":"q","payload":1}]}`
	resp, err := client.Post(url+"/api/v1/push", "application/json", bytes.NewBufferString(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 401, resp.StatusCode)
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "a", "role": "read-write"}).SignedString([]byte("s3cret"))
	require.NoError(t, err)
	req, _ := http.NewRequest("POST", url+"/api/v1/push", bytes.NewBufferString(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err = client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 201, resp.StatusCode)

	_, _, _ = writeTestCert(t, certDir, 2)
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	require.Eventually(t, func() bool {
		c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			return false
		}
		defer c.Close()
		return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64() == 2
	}, 10*time.Second, 10*time.Millisecond, "SIGHUP reloads the certificate")

	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGINT))
	select {
	case code := <-exited:
		require.Equal(t, 0, code)
	case <-time.After(30 * time.Second):
		t.Fatal("comb serve did not stop on SIGINT")
	}
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "a new data directory is the owner's alone")
}

// writeTestCert writes a self-signed certificate for 127.0.0.1 with the given serial.
func writeTestCert(t *testing.T, dir string, serial int64) (string, string, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	cf, kf := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(cf, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(kf, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return cf, kf, pool
}

// issue 11, safe defaults: the start-up log warns about a reachable listener without auth, a
// short HS256 secret, and secrets on the command line; a loopback listener with auth is quiet.
func TestSecurityPostureWarnings(t *testing.T) {
	private := filepath.Join(t.TempDir(), "private")
	require.NoError(t, os.Mkdir(private, 0o700))
	dataDir := private
	logOf := func(args []string, env map[string]string, addr string) string {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		var sf securityFlags
		sf.register(fs)
		require.NoError(t, fs.Parse(args))
		sf.noteCommandLine(fs)
		for _, fe := range securityEnv {
			if v := env[fe[1]]; v != "" {
				require.NoError(t, fs.Set(fe[0], v))
			}
		}
		sec, err := sf.build(zerolog.Nop())
		require.NoError(t, err)
		var buf bytes.Buffer
		a, err := net.ResolveTCPAddr("tcp", addr)
		require.NoError(t, err)
		sec.logPosture(zerolog.New(&buf), a, dataDir)
		return buf.String()
	}
	open := logOf(nil, nil, "0.0.0.0:6632")
	require.Contains(t, open, "JWT auth is off and the listener is reachable from other hosts")
	require.NotContains(t, logOf(nil, nil, "127.0.0.1:6632"), "JWT auth is off")

	short := logOf([]string{"--jwt-secret", "tiny"}, map[string]string{"JWT_ENABLED": "true"}, "127.0.0.1:6632")
	require.Contains(t, short, "JWT_SECRET is shorter than 32 bytes")
	require.Contains(t, short, `"flags":["--jwt-secret"]`)
	require.Contains(t, logOf(nil, map[string]string{"JWT_ENABLED": "true", "JWT_SECRET": "tiny"}, "0.0.0.0:6632"),
		"JWT auth is on without TLS")

	quiet := logOf(nil, map[string]string{"JWT_ENABLED": "true", "JWT_SECRET": strings.Repeat("k", 32)}, "127.0.0.1:6632")
	require.NotContains(t, quiet, `"level":"warn"`, quiet)

	dataDir = t.TempDir()
	require.NoError(t, os.Chmod(dataDir, 0o755))
	require.Contains(t, logOf(nil, nil, "127.0.0.1:6632"), "the data directory is accessible to other users")
}
