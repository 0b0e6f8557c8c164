package auth

import "fmt"

// Level is what a route requires and what a token grants (spec 9.1): admin ⊇ read-write ⊇
// read-only. A token with none of the three roles is authenticated but grants NoRole, which
// passes no level (403).
type Level uint8

const (
	// Unset is the zero value: a route table entry that forgot its level. The route table test
	// refuses it, so no route ships unclassified.
	Unset Level = iota
	// Public needs no token (spec route table "PUB": /health, /metrics, CORS preflight).
	Public
	// NoRole is granted to a valid token without a known role; it is never required.
	NoRole
	// ReadOnly is any valid role (spec "RO").
	ReadOnly
	// ReadWrite is read-write or admin (spec "RW").
	ReadWrite
	// Admin is admin only (spec "AD").
	Admin
)

// String returns the spec's names: "public", "read-only", "read-write", "admin", "none", "unset".
func (l Level) String() string {
	switch l {
	case Public:
		return "public"
	case NoRole:
		return "none"
	case ReadOnly:
		return "read-only"
	case ReadWrite:
		return "read-write"
	case Admin:
		return "admin"
	case Unset:
		return "unset"
	}
	return fmt.Sprintf("level(%d)", uint8(l))
}

// Allows reports whether a token granting l may call a route requiring need.
func (l Level) Allows(need Level) bool {
	switch need {
	case Public:
		return true
	case ReadOnly, ReadWrite, Admin:
		return l >= need && l <= Admin
	}
	return false
}

// Roles names the role values of the three levels (JWT_ROLE_ADMIN, JWT_ROLE_READ_WRITE,
// JWT_ROLE_READ_ONLY; defaults admin, read-write, read-only).
type Roles struct {
	Admin, ReadWrite, ReadOnly string
}

// level returns the highest level any of the names grants, NoRole when none is known.
func (r Roles) level(names ...string) Level {
	best := NoRole
	for _, n := range names {
		switch {
		case n == "":
		case n == r.Admin:
			return Admin
		case n == r.ReadWrite:
			best = max(best, ReadWrite)
		case n == r.ReadOnly:
			best = max(best, ReadOnly)
		}
	}
	return best
}
