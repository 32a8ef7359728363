// Package rpckey is the part of the seam (package guard) that RPC adapters
// on protocol buffers share, lockkit's grpclock and connectlock and one
// written outside this repository: key parts read from a call (Field, a
// message field by path; Metadata, a header or metadata entry sent once;
// Method, the procedure), the default key of unary calls, the message's
// LockKey() (LockKeyer), and the answers (Policy): to a refused call, to a
// handler that failed for its lock's end, to a stream's receive past its
// MaxHold, each with its retry pushback. It imports protobuf, which
// package guard does not, so HTTP adapters never link it.
//
// Every function is generic over the adapter's call type R and reads it
// through an accessor the adapter passes (the message, the procedure, the
// metadata of a call), and every answer is made through the adapter's Wire
// (its status or error type), so one rule serves every protocol.
package rpckey
