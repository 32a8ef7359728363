package rpckey

import (
	"encoding/binary"
	"fmt"
	"net/http"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/lockkit/lockkit/guard"
)

// okStatus is an OK answer's status in the record: the only answers an
// RPC record stores.
const okStatus = http.StatusOK

// encode is a as its record stores it, in guard's record encoding
// (guard.Idempotency.EncodeResponse: the allow-listed header metadata, the
// MaxAnswer bound): its body the response message's full name, then the
// message marshalled deterministically. The name is what a replay decodes
// into, so no adapter needs the method's response type up front.
func (x *Idempotency[R]) encode(a *Answer) ([]byte, error) {
	if a.Msg == nil {
		return nil, fmt.Errorf("lockkit: idempotency: no response message to store")
	}
	name := a.Msg.ProtoReflect().Descriptor().FullName()
	b := binary.AppendUvarint(nil, uint64(len(name)))
	b = append(b, name...)
	b, err := (proto.MarshalOptions{Deterministic: true}).MarshalAppend(b, a.Msg)
	if err != nil {
		return nil, fmt.Errorf("lockkit: idempotency: %w", err)
	}
	return x.x.EncodeResponse(guard.Response{Status: okStatus, Header: a.Header, Body: b})
}

// decodeAnswer reads a record encode wrote into a new message of the type
// it names, which the program must have linked (protoregistry): the
// method's response type always is.
func decodeAnswer(payload []byte) (*Answer, error) {
	resp, err := guard.DecodeResponse(payload)
	if err != nil {
		return nil, err
	}
	if resp.Status != okStatus {
		return nil, fmt.Errorf("%w: status %d", guard.ErrRecord, resp.Status)
	}
	n, k := binary.Uvarint(resp.Body)
	if k <= 0 || n > uint64(len(resp.Body)-k) {
		return nil, fmt.Errorf("%w: no message type", guard.ErrRecord)
	}
	name := protoreflect.FullName(resp.Body[k : k+int(n)])
	mt, err := protoregistry.GlobalTypes.FindMessageByName(name)
	if err != nil {
		return nil, fmt.Errorf("%w: message type %s: %w", guard.ErrRecord, name, err)
	}
	m := mt.New().Interface()
	if err := proto.Unmarshal(resp.Body[k+int(n):], m); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", guard.ErrRecord, name, err)
	}
	return &Answer{Msg: m, Header: resp.Header}, nil
}
