// Package conformance is the behaviour every lockkit adapter must show,
// written once, for lockkit's own adapters and for one written outside
// this repository on package guard: a third party imports it in its own
// tests, with a builder of its adapter, as go-grpc-middleware's testing
// suites are imported.
//
// For an HTTP adapter, an Adapter's Build serves Routes with the
// framework and the lock (each Route says the key spec, the options and a
// framework-free Handler) as an http.Handler, or, for a framework on its
// own HTTP stack (fiber), its Listen serves them on a listener of its own
// and its Traits say what that stack does otherwise; Run runs every
// scenario against it, through a real loopback connection, RunPair the
// ones that involve two replicas with one adapter each (two frameworks
// serving one resource exclude each other), FuzzCanonicalKey fuzzes the
// spellings of an id, and Flood checks that a hostile client's distinct
// methods, paths and keys leave nothing behind:
//
//	func TestConformance(t *testing.T) { conformance.Run(t, conformance.Adapter{Name: "hertz", Listen: listenHertz}) }
//
// The scenarios: exclusion across two replicas and two routes, parallelism
// of different keys, no-wait 409s, Redis down and Redis frozen (fail-closed
// and fail-open), bad and hostile keys, one id in any spelling and one
// cookie in any spelling giving one key, a client hanging up while its
// handler holds and while its request waits, a panicking handler, a handler
// outliving 3×TTL and losing its lock (reported to the release-error hook),
// deadlines, the fencing token header, misconfiguration, graceful shutdown
// and Close with requests holding and waiting, every OPTIONS locked (a
// forged CORS preflight too, with the framework's CORS middleware before
// and after the lock: Route.CORS), identical answer headers for each outcome (also with every
// On* responder set and then set to nil: the default answer), MaxHold ending the
// handler's context and freeing the lock (a handler blocked in a body read
// or an answer write too), the route's key, the kinds of
// lock (Limit, read/write, several keys), and core.MaxWaiters given through
// AcquireOptions bounding every kind's local queue.
//
// For an RPC adapter (gRPC, connect), an RPCAdapter's Serve serves Methods
// of the suite's service and returns a Caller; RunRPC runs the scenarios
// that apply to RPC (exclusion, no-wait and limit answers with their retry
// hints, Redis down, bad and misconfigured keys, identical answers for each
// outcome (also with every On* responder set and then set to nil), MaxHold, an idle stream past its bound freeing its lock, a stream blocked in a send freeing it too,
// core.MaxWaiters through AcquireOptions bounding every kind's local
// queue), and RunRPCPair two protocols on one resource.
//
// OptionCases are the option values every adapter accepts or refuses with
// the same message; RunOptionCases runs them through an adapter's
// constructor.
//
// Everything runs on a real redis-server (it must be on PATH; the tests
// start and stop their own) behind real loopback servers; each replica has
// its own core.Client on its own go-redis client, as separate processes
// would.
package conformance
