package pipeline

import (
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/droverhq/drover/subjects"
)

// dlqSlack is room left under max_payload beyond the headers' own size.
const dlqSlack = 512

// DLQHeadroom is the room a request must leave under the server's
// max_payload for the headers of its DLQ entry (the error text alone may
// take 1 KiB): the largest accepted request (--max-body) is at most
// max_payload less this, so that every DLQ entry holds its whole request.
const DLQHeadroom = 4 << 10

// fitDLQBody returns the body a DLQ entry can carry: the request as it is
// when it fits with the headers h under the connection's max payload, or
// else its first bytes, with Drover-Body-Bytes set in h to the request's
// full size. A request just under max_payload is stored in the tasks
// stream, but Drover's headers would take its DLQ copy over the limit and
// the rejection would fail on every delivery. Only a too_large request can
// be that big, and it cannot be redriven, so nothing is lost that a
// redrive would need.
func fitDLQBody(body []byte, h nats.Header, maxPayload int64) []byte {
	if maxPayload <= 0 {
		return body
	}
	room := maxPayload - headerBytes(h) - dlqSlack
	if int64(len(body)) <= room {
		return body
	}
	h.Set(subjects.HeaderBodyBytes, strconv.Itoa(len(body)))
	room -= int64(len(subjects.HeaderBodyBytes) + 4 + 20)
	return body[:max(room, 0)]
}

// headerBytes is the encoded size of h: "NATS/1.0\r\n", one "Key: value\r\n"
// per value, and the closing "\r\n".
func headerBytes(h nats.Header) int64 {
	n := int64(len("NATS/1.0\r\n") + 2)
	for k, vs := range h {
		for _, v := range vs {
			n += int64(len(k) + 2 + len(v) + 2)
		}
	}
	return n
}
