// Package builders is how lockkit's own adapters serve the routes and the
// RPC methods of the public conformance suite (testing/conformance): one
// builder per adapter, which each adapter's tests run the suite with, and
// the cross-framework pairs (cross_test.go), which need several adapters at
// once. Only tests import it: an adapter written outside this repository
// writes its builder in its own tests.
package builders
