// Package lockkit is the root of lockkit, distributed locks on Redis for Go
// services that sit in front of request handlers. The packages a user
// imports are core (the lock engine), the adapters ginlock, echolock,
// echo5lock, httplock and grpclock, otellock (OpenTelemetry), and in tests
// locktest (a lock Client on an embedded Redis). This package only holds
// the module's version.
package lockkit

// Version is lockkit's version, the one place it is defined: otellock
// reports it as its instrumentation scope version, and CHANGELOG.md's
// sections are named by it. lockkit is v0: until v1 the API may change
// between minor versions (see docs/versioning.md).
const Version = "0.1.0"
