// Package keyspec is the part of the HTTP lock adapters (ginlock, echolock,
// echo5lock, httplock) that is about HTTP but not about one framework:
// echo's key spec ("const:order,param:id"), the readers that turn key parts
// into keypart.Part values for a framework's request type, and the one rule
// for path parameters (PathValue: decoded exactly once). The options every
// adapter shares are checked in internal/adapt; the HTTP answer of each
// outcome is package httplock's.
//
// Keys are always built with keypart.Build (the parts' values joined by
// core.JoinKey), so the same parts give the same key in gin, echo, echo v5,
// net/http and gRPC: Const("order") + Param("id") is exactly "order:42"
// everywhere.
//
// The acquire / bind / release half lives in internal/adapt; this package
// only adds what the HTTP adapters would otherwise each write again.
package keyspec
