package bench

import (
	"net/url"
	"strconv"
)

// Request building for the Queen v1 HTTP API. Everything appends into caller-owned buffers so a
// worker allocates nothing per request once its buffers have grown.

// QueueName is the name of queue index q of run runID. Names are fresh per run so a run never
// reads a previous run's backlog.
func QueueName(runID string, q int) string { return "bench-" + runID + "-q" + strconv.Itoa(q) }

// PartitionName is the name of partition index p.
func PartitionName(p int) string { return "p" + strconv.Itoa(p) }

// AppendPushBody appends the body of POST /api/v1/push (spec 1.1): n items to one queue and
// partition, each with the same payload (a JSON value, written through unchanged) and
// transactionId txPrefix-<seq>, seq counting up from firstSeq. Every Queen client sends a
// transactionId, so the bench does too: the server's dedup work is part of what a user pays.
func AppendPushBody(dst []byte, queue, partition, txPrefix string, firstSeq uint64, payload []byte, n int) []byte {
	dst = append(dst, `{"items":[`...)
	for i := 0; i < n; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"queue":`...)
		dst = appendJSONString(dst, queue)
		dst = append(dst, `,"partition":`...)
		dst = appendJSONString(dst, partition)
		dst = append(dst, `,"transactionId":"`...)
		dst = appendJSONStringBody(dst, txPrefix)
		dst = append(dst, '-')
		dst = strconv.AppendUint(dst, firstSeq+uint64(i), 10)
		dst = append(dst, `","payload":`...)
		dst = append(dst, payload...)
		dst = append(dst, '}')
	}
	return append(dst, `]}`...)
}

// AppendPopURI appends the request URI of a wildcard pop (spec 3.1, 3.2): GET
// /api/v1/pop/queue/:queue?batch=&partitions=1[&consumerGroup=][&wait=true&timeout=].
func AppendPopURI(dst []byte, queue, group string, batch int, waitMs int) []byte {
	dst = append(dst, "/api/v1/pop/queue/"...)
	dst = append(dst, url.PathEscape(queue)...)
	dst = append(dst, "?batch="...)
	dst = strconv.AppendInt(dst, int64(batch), 10)
	dst = append(dst, "&partitions=1"...)
	if group != "" {
		dst = append(dst, "&consumerGroup="...)
		dst = append(dst, url.QueryEscape(group)...)
	}
	if waitMs > 0 {
		dst = append(dst, "&wait=true&timeout="...)
		dst = strconv.AppendInt(dst, int64(waitMs), 10)
	}
	return dst
}

// ackItem is one entry of an ack batch; the byte slices may alias a parser's buffer.
type ackItem struct{ txID, partitionID, leaseID []byte }

// appendAckItem appends one element of "acknowledgments" (spec 4.2) with status completed.
func appendAckItem(dst []byte, first bool, it ackItem) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = append(dst, `{"transactionId":"`...)
	dst = appendJSONStringBody(dst, it.txID)
	dst = append(dst, `","partitionId":"`...)
	dst = appendJSONStringBody(dst, it.partitionID)
	dst = append(dst, '"')
	if len(it.leaseID) > 0 {
		dst = append(dst, `,"leaseId":"`...)
		dst = appendJSONStringBody(dst, it.leaseID)
		dst = append(dst, '"')
	}
	return append(dst, `,"status":"completed"}`...)
}

func appendAckTail(dst []byte, group string) []byte {
	dst = append(dst, ']')
	if group != "" {
		dst = append(dst, `,"consumerGroup":`...)
		dst = appendJSONString(dst, group)
	}
	return append(dst, '}')
}

func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendJSONStringBody(dst, s)
	return append(dst, '"')
}

// appendJSONStringBody escapes s for the inside of a JSON string (RFC 8259 section 7).
func appendJSONStringBody[T string | []byte](dst []byte, s T) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return dst
}
