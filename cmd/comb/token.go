package main

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/combmq/comb/auth"
)

func init() {
	register("token", "mint a JWT that `comb serve` with JWT_ENABLED=true accepts (HS256, RS256, EdDSA)", runToken)
}

// tokenOptions is what `comb token` signs.
type tokenOptions struct {
	secretFile, keyFile string
	alg                 string
	role, rolesClaim    string
	sub, iss, aud       string
	exp                 time.Duration
	now                 time.Time
}

func runToken(args []string) int {
	return tokenMain(args, os.Stdout, os.Stderr, time.Now())
}

func tokenMain(args []string, stdout, stderr io.Writer, now time.Time) int {
	fs := flag.NewFlagSet("comb token", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `usage: comb token (--secret-file FILE | --key-file FILE) --role ROLE [flags]

Prints a signed JWT for a server started with JWT_ENABLED=true (README, "Running comb
securely"). HS256 signs with the secret in --secret-file: its bytes without the trailing
newline, what JWT_SECRET="$(cat FILE)" gives the server. RS256 and EdDSA sign with the PEM
private key in --key-file (RSA: PKCS#1 or PKCS#8; Ed25519: PKCS#8); the server verifies with
the public half in JWT_PUBLIC_KEY.
Examples:
  comb token --secret-file /etc/comb/jwt-secret --role read-write --sub billing --exp 24h
  openssl genpkey -algorithm ed25519 -out ed.pem
  comb token --key-file ed.pem --role admin

flags:`)
		fs.PrintDefaults()
	}
	var o tokenOptions
	fs.StringVar(&o.secretFile, "secret-file", "", "file holding the HS256 secret (the server's JWT_SECRET)")
	fs.StringVar(&o.keyFile, "key-file", "", "PEM private key, RSA (RS256) or Ed25519 (EdDSA); the server holds the public key (JWT_PUBLIC_KEY)")
	fs.StringVar(&o.alg, "alg", "", "signing algorithm: HS256 with --secret-file; RS256, RS384, RS512 or EdDSA with --key-file; default from the key")
	fs.StringVar(&o.role, "role", "", "role granted, as the server names it: admin, read-write or read-only unless JWT_ROLE_* renamed them (required)")
	fs.StringVar(&o.rolesClaim, "roles-claim", auth.DefaultRolesClaim, "claim that holds the role (the server's JWT_ROLES_CLAIM)")
	fs.StringVar(&o.sub, "sub", "", "subject (sub claim): who the token is for; stamped as producerSub on its pushes")
	fs.StringVar(&o.iss, "iss", "", "issuer (iss claim), when the server sets JWT_ISSUER")
	fs.StringVar(&o.aud, "aud", "", "audience (aud claim), when the server sets JWT_AUDIENCE")
	fs.DurationVar(&o.exp, "exp", time.Hour, "lifetime: the token expires this long after now (exp claim); 0 = no exp, a long-lived API key")
	if err := parseFlags(fs, args, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		reportFlag(stderr, fs, fmt.Sprintf("unexpected argument %q", fs.Arg(0)))
		return 2
	}
	o.now = now
	tok, warn, err := mintToken(o)
	if err != nil {
		reportFlag(stderr, fs, err.Error())
		return 2
	}
	if warn != "" {
		fmt.Fprintln(stderr, "comb token: warning:", warn)
	}
	fmt.Fprintln(stdout, tok)
	return 0
}

// mintToken signs the claims o describes: iat now, exp now+o.exp, the role in o.rolesClaim, and
// sub, iss and aud when given. warn is set for a secret an offline search could find.
//
// Errors: a missing or doubled key source, an unreadable or empty secret, a key that is not an
// RSA or Ed25519 private key, an algorithm that does not fit the key, a missing role, a
// negative lifetime.
func mintToken(o tokenOptions) (token, warn string, err error) {
	if (o.secretFile == "") == (o.keyFile == "") {
		return "", "", errors.New("give exactly one of --secret-file (HS256) and --key-file (RS256, EdDSA)")
	}
	if o.role == "" {
		return "", "", errors.New("--role is required: admin, read-write or read-only")
	}
	if o.exp < 0 {
		return "", "", fmt.Errorf("--exp %s: want a positive duration, like 1h or 720h, or 0 for a token that never expires", o.exp)
	}
	var method jwt.SigningMethod
	var key any
	if o.secretFile != "" {
		b, err := os.ReadFile(o.secretFile)
		if err != nil {
			return "", "", fmt.Errorf("--secret-file: %w", err)
		}
		secret := strings.TrimRight(string(b), "\r\n")
		if secret == "" {
			return "", "", fmt.Errorf("--secret-file %s is empty", o.secretFile)
		}
		if o.alg != "" && !strings.EqualFold(o.alg, auth.HS256) {
			return "", "", fmt.Errorf("--alg %s does not sign with a secret; a secret signs HS256", o.alg)
		}
		if len(secret) < 32 {
			// RFC 7518 3.2: an HS256 key at least as long as the hash.
			warn = fmt.Sprintf("the secret is %d bytes; under 32, HS256 tokens can be forged by an offline search", len(secret))
		}
		method, key = jwt.SigningMethodHS256, []byte(secret)
	} else {
		k, err := readPrivateKey(o.keyFile)
		if err != nil {
			return "", "", err
		}
		if method, err = methodFor(k, o.alg); err != nil {
			return "", "", err
		}
		key = k
	}
	claims := jwt.MapClaims{
		o.rolesClaim: o.role,
		"iat":        o.now.Unix(),
	}
	if o.exp > 0 {
		claims["exp"] = o.now.Add(o.exp).Unix()
	}
	if o.sub != "" {
		claims["sub"] = o.sub
	}
	if o.iss != "" {
		claims["iss"] = o.iss
	}
	if o.aud != "" {
		claims["aud"] = o.aud
	}
	token, err = jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		return "", "", fmt.Errorf("signing: %w", err)
	}
	return token, warn, nil
}

// readPrivateKey reads the first PEM private key of path: PKCS#8 (RSA or Ed25519) or PKCS#1
// (RSA).
func readPrivateKey(path string) (crypto.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--key-file: %w", err)
	}
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			return nil, fmt.Errorf("--key-file %s: no PEM private key (want -----BEGIN PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY-----)", path)
		}
		switch blk.Type {
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
			if err != nil {
				return nil, fmt.Errorf("--key-file %s: %w", path, err)
			}
			switch k := k.(type) {
			case ed25519.PrivateKey:
				return k, nil
			case *rsa.PrivateKey:
				return k, nil
			}
			return nil, fmt.Errorf("--key-file %s: a %T; want an RSA or Ed25519 key", path, k)
		case "RSA PRIVATE KEY":
			k, err := x509.ParsePKCS1PrivateKey(blk.Bytes)
			if err != nil {
				return nil, fmt.Errorf("--key-file %s: %w", path, err)
			}
			return k, nil
		}
	}
}

// methodFor is the signing method of key: EdDSA for Ed25519, RS256 (or the RS384/RS512 alg
// asks for) for RSA.
func methodFor(key crypto.Signer, alg string) (jwt.SigningMethod, error) {
	switch key.(type) {
	case ed25519.PrivateKey:
		if alg != "" && !strings.EqualFold(alg, auth.EdDSA) {
			return nil, fmt.Errorf("--alg %s does not fit an Ed25519 key; it signs EdDSA", alg)
		}
		return jwt.SigningMethodEdDSA, nil
	case *rsa.PrivateKey:
		switch strings.ToUpper(alg) {
		case "", "RS256":
			return jwt.SigningMethodRS256, nil
		case "RS384":
			return jwt.SigningMethodRS384, nil
		case "RS512":
			return jwt.SigningMethodRS512, nil
		}
		return nil, fmt.Errorf("--alg %s does not fit an RSA key; want RS256, RS384 or RS512", alg)
	}
	return nil, fmt.Errorf("unsupported key %T", key)
}
