package meta

import "github.com/google/uuid"

// IDString formats a queue or partition id as the API shows it (a lower-case
// UUID, which is also its directory name).
func IDString(id [16]byte) string { return uuid.UUID(id).String() }

// ParseID parses a directory name made by IDString; anything else (upper
// case, braces, other lengths) is not an id.
func ParseID(s string) ([16]byte, bool) {
	if len(s) != 36 {
		return [16]byte{}, false
	}
	u, err := uuid.Parse(s)
	if err != nil || u.String() != s {
		return [16]byte{}, false
	}
	return u, true
}
