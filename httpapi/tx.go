package httpapi

import (
	"strconv"
	"strings"

	json "github.com/goccy/go-json"
	"github.com/valyala/fasthttp"

	"github.com/combmq/comb/broker"
)

// txBody is POST /api/v1/transaction (spec 5.1). requiredLeases is accepted and ignored
// (spec 11 #44).
type txBody struct {
	Operations []txOpJSON `json:"operations"`
}

// txOpJSON is one operation: a push of items, or one ack.
type txOpJSON struct {
	Type          string         `json:"type"`
	Items         []pushItemJSON `json:"items"`
	TransactionID string         `json:"transactionId"`
	PartitionID   string         `json:"partitionId"`
	Status        string         `json:"status"`
	ConsumerGroup string         `json:"consumerGroup"`
	LeaseID       string         `json:"leaseId"`
	Error         string         `json:"error"`
}

// txTypeMessage maps a mistyped field's path ("operations.2.items.0.queue") to a 400 message.
func txTypeMessage(field string) string {
	if !strings.HasPrefix(field, "operations.") {
		return "operations array required"
	}
	if strings.Contains(field, ".items") {
		return itemsTypeMessage(field, "operations.")
	}
	switch field[strings.LastIndexByte(field, '.')+1:] {
	case "type":
		return "type must be a string"
	case "transactionId":
		return msgAckTxRequired
	case "partitionId":
		return msgAckPartitionRequired
	case "status":
		return "status must be a string"
	case "consumerGroup":
		return "consumerGroup must be a string"
	case "leaseId":
		return "leaseId must be a string"
	case "error":
		return "error must be a string"
	}
	return "Each operation must be an object"
}

// toTxOps validates and flattens the operations: each push item becomes one op (spec 5.1).
func toTxOps(in []txOpJSON) (ops []broker.TxOp, msg string) {
	ops = make([]broker.TxOp, 0, len(in))
	for i := range in {
		op := &in[i]
		switch op.Type {
		case "push":
			if op.Items == nil {
				return nil, "items array is required"
			}
			items, msg := toPushItems(op.Items, "operations["+strconv.Itoa(i)+"].items")
			if msg != "" {
				return nil, msg
			}
			for _, it := range items {
				ops = append(ops, broker.TxOp{Type: "push", Push: it})
			}
		case "ack":
			if op.TransactionID == "" {
				return nil, msgAckTxRequired
			}
			if op.PartitionID == "" {
				return nil, msgAckPartitionRequired
			}
			if m := checkTransactionID(op.TransactionID); m != "" {
				return nil, m
			}
			if m := checkGroup(op.ConsumerGroup); m != "" {
				return nil, m
			}
			ops = append(ops, broker.TxOp{
				Type:  "ack",
				Group: op.ConsumerGroup,
				Ack: broker.AckItem{
					TransactionID: op.TransactionID,
					PartitionID:   op.PartitionID,
					LeaseID:       op.LeaseID,
					Status:        op.Status,
					Error:         capErrorText(op.Error),
				},
			})
		default:
			// Nothing has run yet, so this is a validation failure and changes nothing.
			return nil, "Unknown operation type: " + op.Type
		}
	}
	return ops, ""
}

// decodeTransaction parses and validates a transaction body (spec 5.1) into flattened ops.
// msg is the 400 message, "" when valid.
func decodeTransaction(body []byte) ([]broker.TxOp, string) {
	var req txBody
	if err := json.UnmarshalOf(body, &req); err != nil {
		return nil, decodeError(err, txTypeMessage)
	}
	if req.Operations == nil {
		return nil, "operations array required"
	}
	if len(req.Operations) == 0 {
		return nil, "operations array cannot be empty"
	}
	ops, msg := toTxOps(req.Operations)
	if msg == "" && len(ops) == 0 {
		return nil, "operations array cannot be empty" // only pushes of no items: nothing to do
	}
	for i := 0; msg == "" && i < len(ops); i++ {
		if ops[i].Type == "push" {
			msg = checkItemsNotReplaced([]broker.PushItem{ops[i].Push}, body)
		} else {
			msg = checkNotReplaced("Consumer group", ops[i].Group, body)
		}
	}
	return ops, msg
}

// transaction serves POST /api/v1/transaction: 200 once validated, success or not (spec 5.3).
// Its pushes are stamped with producerSub as /push's are (spec 11 #45).
func (s *Server) transaction(ctx *fasthttp.RequestCtx, producerSub string) {
	body, ok := requireBody(ctx)
	if !ok {
		return
	}
	ops, msg := decodeTransaction(body)
	if msg != "" {
		badRequest(ctx, msg)
		return
	}
	for i := range ops {
		if ops[i].Type == "push" {
			ops[i].Push.ProducerSub = producerSub
		}
	}
	res, err := s.b.Transaction(ops)
	if err != nil {
		s.fail(ctx, err)
		return
	}
	p := getBuf()
	*p = appendTxResult(*p, &res)
	sendJSON(ctx, fasthttp.StatusOK, p)
}

// appendTxResult encodes spec 5.3; push and ack results carry different fields.
func appendTxResult(b []byte, r *broker.TxResult) []byte {
	b = append(b, `{"transactionId":`...)
	b = appendString(b, r.TransactionID)
	b = append(b, `,"success":`...)
	b = appendBool(b, r.Success)
	if !r.Success {
		b = append(b, `,"error":`...)
		b = appendString(b, r.Error)
	}
	b = append(b, `,"results":[`...)
	for i := range r.Results {
		o := &r.Results[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"index":`...)
		b = appendInt(b, int64(o.Index))
		b = append(b, `,"type":`...)
		b = appendString(b, o.Type)
		b = append(b, `,"success":`...)
		b = appendBool(b, o.Success)
		b = append(b, `,"transactionId":`...)
		b = appendString(b, o.TransactionID)
		if o.Type == "push" {
			b = append(b, `,"messageId":`...)
			b = appendString(b, o.MessageID)
			b = append(b, `,"partitionId":`...)
			b = appendString(b, o.PartitionID)
			b = append(b, `,"queueName":`...)
			b = appendString(b, o.QueueName)
			if o.Duplicate {
				// spec 11 #42: a push already stored is reported, as /push does, and succeeds.
				b = append(b, `,"status":"duplicate","duplicate":true`...)
			}
			if o.Error != "" {
				b = append(b, `,"error":`...)
				b = appendString(b, o.Error)
			}
		} else {
			b = append(b, `,"error":`...)
			b = appendStringOrNull(b, o.Error)
			b = append(b, `,"dlq":`...)
			b = appendBool(b, o.DLQ)
		}
		b = append(b, '}')
	}
	return append(b, ']', '}')
}
