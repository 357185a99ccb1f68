package jsapi

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadEntry(t *testing.T) {
	t.Parallel()
	stored := func(extra ...string) nats.Header {
		h := nats.Header{
			jetstream.StreamHeader: {"KV_b"}, jetstream.SequenceHeader: {"12"},
			jetstream.SubjectHeader: {"$KV.b.k"}, jetstream.TimeStampHeaer: {"2026-12-02T13:00:00.123456789Z"},
		}
		for i := 0; i+1 < len(extra); i += 2 {
			h.Set(extra[i], extra[i+1])
		}
		return h
	}
	for _, tc := range []struct {
		name    string
		header  nats.Header
		data    string
		want    Entry
		wantErr error
		errText string
	}{
		{name: "a value", header: stored(), data: "v", want: Entry{Value: []byte("v"), Revision: 12}},
		{name: "an empty value", header: stored(), want: Entry{Revision: 12}},
		{name: "no message", header: nats.Header{"Status": {"404"}}, wantErr: jetstream.ErrKeyNotFound},
		{name: "another status", header: nats.Header{"Status": {"408"}, "Description": {"Request Timeout"}}, errText: "Request Timeout (status 408)"},
		{name: "a status without a description", header: nats.Header{"Status": {"503"}}, errText: "unable to get message (status 503)"},
		{name: "deleted", header: stored("KV-Operation", "DEL"), want: Entry{Revision: 12}, wantErr: jetstream.ErrKeyDeleted},
		{name: "purged", header: stored("KV-Operation", "PURGE"), want: Entry{Revision: 12}, wantErr: jetstream.ErrKeyDeleted},
		{name: "aged out", header: stored(jetstream.MarkerReasonHeader, "MaxAge"), want: Entry{Revision: 12}, wantErr: jetstream.ErrKeyDeleted},
		{name: "removed", header: stored(jetstream.MarkerReasonHeader, "Remove"), want: Entry{Revision: 12}, wantErr: jetstream.ErrKeyDeleted},
		{name: "a put's operation", header: stored("KV-Operation", "PUT"), data: "v", want: Entry{Value: []byte("v"), Revision: 12}},
		{name: "no sequence", header: without(stored(), jetstream.SequenceHeader), data: "v", wantErr: jetstream.ErrInvalidJSAck},
		{name: "a bad sequence", header: stored(jetstream.SequenceHeader, "x"), data: "v", wantErr: jetstream.ErrInvalidJSAck},
		{name: "no stream", header: without(stored(), jetstream.StreamHeader), data: "v", wantErr: jetstream.ErrInvalidJSAck},
		{name: "no subject", header: without(stored(), jetstream.SubjectHeader), data: "v", wantErr: jetstream.ErrInvalidJSAck},
		{name: "no time stamp", header: without(stored(), jetstream.TimeStampHeaer), data: "v", wantErr: jetstream.ErrInvalidJSAck},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var data []byte
			if tc.data != "" {
				data = []byte(tc.data)
			}
			e, err := readEntry(&nats.Msg{Header: tc.header, Data: data})
			switch {
			case tc.wantErr != nil:
				require.ErrorIs(t, err, tc.wantErr)
			case tc.errText != "":
				require.ErrorContains(t, err, tc.errText)
				return
			default:
				require.NoError(t, err)
			}
			assert.Equal(t, tc.want, e)
		})
	}
}

// without is h less its header key.
func without(h nats.Header, key string) nats.Header {
	h.Del(key)
	return h
}
