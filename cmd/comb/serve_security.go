package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/combmq/comb/auth"
	"github.com/combmq/comb/httpapi"
	"github.com/combmq/comb/seal"
)

// securityEnv maps the security flags to their environment (flag > environment > default).
// The JWT_* and QUEEN_ENCRYPTION_KEY names are Queen's own (spec 9.1, 9.2), so a Queen
// deployment's environment works unchanged.
var securityEnv = [][2]string{
	{"jwt-enabled", "JWT_ENABLED"},
	{"jwt-algorithm", "JWT_ALGORITHM"},
	{"jwt-secret", "JWT_SECRET"},
	{"jwt-public-key", "JWT_PUBLIC_KEY"},
	{"jwt-jwks-url", "JWT_JWKS_URL"},
	{"jwt-issuer", "JWT_ISSUER"},
	{"jwt-audience", "JWT_AUDIENCE"},
	{"jwt-clock-skew", "JWT_CLOCK_SKEW"},
	{"jwt-skip-paths", "JWT_SKIP_PATHS"},
	{"jwt-roles-claim", "JWT_ROLES_CLAIM"},
	{"jwt-roles-array-claim", "JWT_ROLES_ARRAY_CLAIM"},
	{"jwt-role-admin", "JWT_ROLE_ADMIN"},
	{"jwt-role-read-write", "JWT_ROLE_READ_WRITE"},
	{"jwt-role-read-only", "JWT_ROLE_READ_ONLY"},
	{"jwt-jwks-refresh-interval", "JWT_JWKS_REFRESH_INTERVAL"},
	{"jwt-jwks-timeout", "JWT_JWKS_TIMEOUT_MS"},
	{"encryption-key", "QUEEN_ENCRYPTION_KEY"},
	{"encryption-previous-keys", "COMB_ENCRYPTION_PREVIOUS_KEYS"},
	{"tls-cert", "COMB_TLS_CERT"},
	{"tls-key", "COMB_TLS_KEY"},
}

// securityFlags are the flags of JWT auth (spec 9.1), encryption at rest (9.2) and TLS.
type securityFlags struct {
	jwt                 auth.Config
	skipPaths           string
	publicKey           string
	clockSkew           unitDuration
	jwksRefresh         unitDuration
	jwksTimeout         unitDuration
	encKey, encPrevious string
	tlsCert, tlsKey     string
	// onCommandLine names the secrets given as flags rather than in the environment.
	onCommandLine []string
}

func (s *securityFlags) register(fs *flag.FlagSet) {
	const secretNote = " (prefer the environment: command-line flags are visible to every user in ps)"
	fs.BoolVar(&s.jwt.Enabled, "jwt-enabled", false, "require a JWT on every route but the public ones (env JWT_ENABLED)")
	fs.StringVar(&s.jwt.Algorithm, "jwt-algorithm", auth.DefaultAlgorithm, "HS256 | RS256 (also RS384/RS512 tokens) | EdDSA | auto (env JWT_ALGORITHM)")
	fs.StringVar(&s.jwt.Secret, "jwt-secret", "", "HS256 key, its raw UTF-8 bytes"+secretNote+" (env JWT_SECRET)")
	fs.StringVar(&s.publicKey, "jwt-public-key", "", "RSA or Ed25519 public key: PEM text, or the path of a PEM file (env JWT_PUBLIC_KEY)")
	fs.StringVar(&s.jwt.JWKSURL, "jwt-jwks-url", "", "http(s) URL of a JWK set, cached, refreshed hourly and on an unknown kid (env JWT_JWKS_URL)")
	fs.StringVar(&s.jwt.Issuer, "jwt-issuer", "", "required iss claim; empty = any (env JWT_ISSUER)")
	fs.StringVar(&s.jwt.Audience, "jwt-audience", "", "required aud claim; empty = any (env JWT_AUDIENCE)")
	s.clockSkew = unitDuration{d: auth.DefaultClockSkew, unit: time.Second}
	fs.Var(&s.clockSkew, "jwt-clock-skew", "leeway on exp, nbf and iat: seconds, or a duration like 30s (env JWT_CLOCK_SKEW)")
	fs.StringVar(&s.skipPaths, "jwt-skip-paths", auth.DefaultSkipPaths, "comma-separated paths that need no token; an entry ending in / is a prefix (env JWT_SKIP_PATHS)")
	fs.StringVar(&s.jwt.RolesClaim, "jwt-roles-claim", auth.DefaultRolesClaim, "claim holding one role (env JWT_ROLES_CLAIM)")
	fs.StringVar(&s.jwt.RolesArrayClaim, "jwt-roles-array-claim", auth.DefaultRolesArrayClaim, "claim holding an array of roles (env JWT_ROLES_ARRAY_CLAIM)")
	fs.StringVar(&s.jwt.Roles.Admin, "jwt-role-admin", "admin", "role value of the admin level (env JWT_ROLE_ADMIN)")
	fs.StringVar(&s.jwt.Roles.ReadWrite, "jwt-role-read-write", "read-write", "role value of the read-write level (env JWT_ROLE_READ_WRITE)")
	fs.StringVar(&s.jwt.Roles.ReadOnly, "jwt-role-read-only", "read-only", "role value of the read-only level (env JWT_ROLE_READ_ONLY)")
	s.jwksRefresh = unitDuration{d: auth.DefaultJWKSRefreshInterval, unit: time.Second}
	fs.Var(&s.jwksRefresh, "jwt-jwks-refresh-interval", "age at which the JWK set is fetched again: seconds, or a duration (env JWT_JWKS_REFRESH_INTERVAL)")
	s.jwksTimeout = unitDuration{d: auth.DefaultJWKSTimeout, unit: time.Millisecond}
	fs.Var(&s.jwksTimeout, "jwt-jwks-timeout", "bound on one JWK set fetch: milliseconds, or a duration (env JWT_JWKS_TIMEOUT_MS)")
	fs.StringVar(&s.encKey, "encryption-key", "", "64 hex characters: AES-256-GCM key for the payloads of queues with encryptionEnabled"+secretNote+" (env QUEEN_ENCRYPTION_KEY)")
	fs.StringVar(&s.encPrevious, "encryption-previous-keys", "", "comma-separated retired keys, 64 hex characters each, still accepted for reading after a rotation (env COMB_ENCRYPTION_PREVIOUS_KEYS)")
	fs.StringVar(&s.tlsCert, "tls-cert", "", "PEM certificate (chain) file: serve HTTPS on --addr; SIGHUP reloads it (env COMB_TLS_CERT)")
	fs.StringVar(&s.tlsKey, "tls-key", "", "PEM private key file of --tls-cert (env COMB_TLS_KEY)")
}

// noteCommandLine records which secrets were given as flags (visible to every user in ps), for
// the start-up warning; call it after fs.Parse and before the environment is applied.
func (s *securityFlags) noteCommandLine(fs *flag.FlagSet) {
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "jwt-secret", "encryption-key", "encryption-previous-keys":
			s.onCommandLine = append(s.onCommandLine, "--"+f.Name)
		}
	})
}

// security is what the flags build.
type security struct {
	auth *auth.Authenticator // nil: JWT auth off
	keys *seal.Keyring       // nil: no encryption key
	cert *httpapi.Certificate

	shortSecret   bool     // an HS256 secret under 32 bytes
	onCommandLine []string // secrets given as flags
}

// build validates the flags and makes the authenticator (fetching the JWK set once), the key
// ring and the TLS certificate. Errors are configuration errors: the server must not start.
func (s *securityFlags) build(log zerolog.Logger) (security, error) {
	var out security
	cfg := s.jwt
	cfg.SkipPaths = auth.SplitPaths(s.skipPaths)
	cfg.ClockSkew = s.clockSkew.d
	if cfg.ClockSkew == 0 {
		cfg.ClockSkew = -1 // an explicit 0 means no leeway (auth.Config's zero means the default)
	}
	cfg.JWKSRefreshInterval, cfg.JWKSTimeout = s.jwksRefresh.d, s.jwksTimeout.d
	pk, err := readPEMArg(s.publicKey)
	if err != nil {
		return out, err
	}
	cfg.PublicKeyPEM = pk
	out.onCommandLine = s.onCommandLine
	out.shortSecret = cfg.Enabled && cfg.Secret != "" && len(cfg.Secret) < 32
	if cfg.Enabled {
		a, err := auth.New(cfg, log)
		if err != nil {
			return out, err
		}
		out.auth = a
	}
	if s.encKey == "" && s.encPrevious != "" {
		return out, fmt.Errorf("--encryption-previous-keys without --encryption-key (QUEEN_ENCRYPTION_KEY): nothing could seal new payloads")
	}
	if s.encKey != "" {
		// A key that is set but malformed stops the start (spec 9.2 would only disable
		// encryption): a typo must not silently store plaintext.
		keys, err := seal.ParseKeyring(s.encKey, auth.SplitPaths(s.encPrevious))
		if err != nil {
			return out, fmt.Errorf("QUEEN_ENCRYPTION_KEY / --encryption-key: %w", err)
		}
		out.keys = keys
	}
	if (s.tlsCert == "") != (s.tlsKey == "") {
		return out, fmt.Errorf("--tls-cert and --tls-key go together")
	}
	if s.tlsCert != "" {
		c, err := httpapi.LoadCertificate(s.tlsCert, s.tlsKey)
		if err != nil {
			return out, err
		}
		out.cert = c
	}
	return out, nil
}

// readPEMArg returns PEM text given inline, or read from the file the value names.
func readPEMArg(v string) (string, error) {
	if v == "" || strings.Contains(v, "-----BEGIN") {
		return v, nil
	}
	b, err := os.ReadFile(v)
	if err != nil {
		return "", fmt.Errorf("JWT_PUBLIC_KEY / --jwt-public-key: neither PEM text nor a readable file: %w", err)
	}
	return string(b), nil
}

// logPosture says at start-up how the server is secured, and warns where it is not (issue 11,
// "Safe defaults"): auth off on a listener other hosts can reach, tokens in clear text, a data
// directory other users can read.
func (sec security) logPosture(log zerolog.Logger, ln net.Addr, dataDir string) {
	loopback := isLoopback(ln)
	switch {
	case sec.auth == nil && !loopback:
		log.Warn().Str("addr", ln.String()).Msg("JWT auth is off and the listener is reachable from other hosts: anyone who can connect can push, pop, delete queues and switch maintenance on; set JWT_ENABLED=true (README, \"Running comb securely\") or listen on 127.0.0.1")
	case sec.auth != nil && sec.cert == nil && !loopback:
		log.Warn().Str("addr", ln.String()).Msg("JWT auth is on without TLS: tokens cross the network in clear text; serve HTTPS with --tls-cert/--tls-key or terminate TLS in front of comb")
	}
	if sec.auth != nil {
		log.Info().Msg("JWT auth on")
	}
	if sec.shortSecret {
		// RFC 7518 3.2: an HS256 key must be at least as long as the hash (256 bits); a short
		// one can be found by guessing offline from any token.
		log.Warn().Msg("JWT_SECRET is shorter than 32 bytes: HS256 tokens signed with it can be forged by an offline search; use a random secret of 32 bytes or more")
	}
	if len(sec.onCommandLine) > 0 {
		log.Warn().Strs("flags", sec.onCommandLine).Msg("secrets given on the command line are visible to every user of this machine (ps); pass them in the environment instead")
	}
	if sec.keys != nil {
		log.Info().Str("key_id", sec.keys.CurrentID()).Strs("key_ids", sec.keys.IDs()).
			Msg("encryption at rest: payloads of queues with encryptionEnabled are sealed with AES-256-GCM")
	} else {
		log.Info().Msg("encryption at rest: no QUEEN_ENCRYPTION_KEY; queues with encryptionEnabled store plaintext (warned per queue)")
	}
	if fi, err := os.Stat(dataDir); err == nil && fi.Mode().Perm()&0o007 != 0 {
		log.Warn().Str("data_dir", dataDir).Str("mode", fi.Mode().Perm().String()).
			Msg("the data directory is accessible to other users; payloads of queues without encryption are stored in clear: chmod 700 it")
	}
}

// isLoopback reports whether a listener accepts loopback connections only.
func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP != nil && tcp.IP.IsLoopback()
}

// tlsConfig is the server's TLS configuration, nil without --tls-cert.
func (sec security) tlsConfig() *tls.Config {
	if sec.cert == nil {
		return nil
	}
	return sec.cert.TLSConfig()
}

// reloadOnHUP reloads the TLS certificate on SIGHUP (a renewed certificate without a restart);
// a failed reload keeps the one in use. It returns the function that stops listening.
func (sec security) reloadOnHUP(log zerolog.Logger) func() {
	if sec.cert == nil {
		return func() {}
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				if err := sec.cert.Reload(); err != nil {
					log.Error().Err(err).Msg("SIGHUP: TLS certificate not reloaded; the previous one stays in use")
				} else {
					log.Info().Msg("SIGHUP: TLS certificate reloaded")
				}
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(done)
	}
}
