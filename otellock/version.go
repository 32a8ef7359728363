package otellock // import "github.com/lockkit/lockkit/otellock"

import "github.com/lockkit/lockkit"

// ScopeName is the instrumentation scope name of the tracer and meter that
// otellock creates: the package's import path, as OpenTelemetry asks.
const ScopeName = "github.com/lockkit/lockkit/otellock"

// Version is the version of this instrumentation, reported as the
// instrumentation scope version: lockkit's own.
const Version = lockkit.Version
