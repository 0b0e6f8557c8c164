package httpapi

import (
	"strings"
	"unsafe"

	"github.com/combmq/comb/broker"
)

// decodeAckBatchFast reads the ack batch every client sends (spec 4.2: consumerGroup plus
// acknowledgments whose fields are escape-free strings) by hand, on the push fast path's
// scanner: parsing with fastjson and copying field by field was half the CPU of an ack. Any
// other shape (an escape, a duplicate key, a wrong type, a missing or empty id, invalid JSON)
// returns false and decodeAckBatch takes the fastjson path, which owns every 400 message;
// FuzzDecodeAckBatchFastMatchesFallback keeps the two in agreement.
func decodeAckBatchFast(body []byte) (items []broker.AckItem, group string, ok bool) {
	d := fastDecoder{b: body}
	d.ws()
	if !d.eat('{') {
		return nil, "", false
	}
	var acks []ackSpans
	var groupSpan span
	seenAcks, seenGroup := false, false
	d.ws()
	if !d.eat('}') {
		for {
			d.ws()
			key, ok := d.plainString()
			if !ok {
				return nil, "", false
			}
			d.ws()
			if !d.eat(':') {
				return nil, "", false
			}
			d.ws()
			switch string(key) {
			case "acknowledgments":
				if seenAcks {
					return nil, "", false
				}
				seenAcks = true
				if acks, ok = d.ackItems(); !ok {
					return nil, "", false
				}
			case "consumerGroup":
				if seenGroup {
					return nil, "", false
				}
				seenGroup = true
				if groupSpan, ok = d.optPlainString(); !ok {
					return nil, "", false
				}
			default:
				if !d.skipValue(0) {
					return nil, "", false
				}
			}
			d.ws()
			if d.eat('}') {
				break
			}
			if !d.eat(',') {
				return nil, "", false
			}
		}
	}
	d.ws()
	if d.i != len(d.b) || acks == nil {
		return nil, "", false
	}
	if groupSpan.set {
		group = strings.Clone(string(body[groupSpan.from:groupSpan.to]))
		if checkGroup(group) != "" {
			return nil, "", false
		}
	}
	// One copy of the body backs every string (the arena of the fastjson path does the same
	// with one copy of the fields); nothing writes to it afterwards.
	raw := append([]byte(nil), body...)
	str := unsafe.String(unsafe.SliceData(raw), len(raw))
	at := func(sp span) string { return str[sp.from:sp.to] }
	items = make([]broker.AckItem, len(acks))
	for i := range acks {
		a := &acks[i]
		it := broker.AckItem{TransactionID: at(a.tx), PartitionID: at(a.partition),
			Status: at(a.status), LeaseID: at(a.lease), Error: at(a.err)}
		if it.TransactionID == "" || it.PartitionID == "" || checkTransactionID(it.TransactionID) != "" {
			return nil, "", false
		}
		items[i] = it
	}
	return items, group, true
}

// ackSpans is where one acknowledgement's fields sit in the body (absent or null: empty).
type ackSpans struct {
	tx, partition, status, lease, err span
}

func (d *fastDecoder) ackItems() ([]ackSpans, bool) {
	if !d.eat('[') {
		return nil, false
	}
	acks := make([]ackSpans, 0, 100)
	d.ws()
	if d.eat(']') {
		return acks, true
	}
	for {
		d.ws()
		var a ackSpans
		if !d.ackItem(&a) {
			return nil, false
		}
		acks = append(acks, a)
		d.ws()
		if d.eat(']') {
			return acks, true
		}
		if !d.eat(',') {
			return nil, false
		}
	}
}

func (d *fastDecoder) ackItem(a *ackSpans) bool {
	if !d.eat('{') {
		return false
	}
	d.ws()
	if d.eat('}') {
		return false
	}
	for {
		d.ws()
		key, ok := d.plainString()
		if !ok {
			return false
		}
		d.ws()
		if !d.eat(':') {
			return false
		}
		d.ws()
		var dst *span
		switch string(key) {
		case "transactionId":
			dst = &a.tx
		case "partitionId":
			dst = &a.partition
		case "status":
			dst = &a.status
		case "leaseId":
			dst = &a.lease
		case "error":
			dst = &a.err
		default:
			if !d.skipValue(0) {
				return false
			}
		}
		if dst != nil {
			if dst.set {
				return false // duplicate key
			}
			if *dst, ok = d.optPlainString(); !ok {
				return false
			}
			dst.set = true
		}
		d.ws()
		if d.eat('}') {
			return true
		}
		if !d.eat(',') {
			return false
		}
	}
}

// optPlainString reads null (an empty span) or a plain string (see plainString).
func (d *fastDecoder) optPlainString() (span, bool) {
	if d.literal("null") {
		return span{}, true
	}
	from := d.i + 1
	if _, ok := d.plainString(); !ok {
		return span{}, false
	}
	return span{from, d.i - 1, true}, true
}
