package report

import "github.com/google/uuid"

// uuidString is the text form of a queue, partition or message id.
func uuidString(id [16]byte) string { return uuid.UUID(id).String() }
