package guard

import (
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"slices"
	"strings"
)

// The domains of the two hashes: a change of what either holds gets a new
// one, so records written by one version are never read as another's.
const (
	recordDomain      = "lockkit idempotency record v1"
	fingerprintDomain = "lockkit idempotency fingerprint v1"
)

// RecordKey is the key of r's record in core: the client's key (ClientKey)
// with r's method, its route template (the matched route, or the RPC
// method) and the values of x's Scope, read and checked as lock key parts
// are (a missing part, or one with a control character, is a
// *core.KeyPartError: 400, or 500 for the server's mistake). So the same
// key sent by another tenant, or to another route or method, is another
// record and never replays this one's answer.
//
// The key is SHA-256 of those values, each length-prefixed so that no two
// tuples share a key, in one hash tag ("{...}", base64url): the record is
// one Redis Cluster slot, and neither the client's key nor the tenant is
// stored in the clear.
func (x *Idempotency[R]) RecordKey(r R, method, route, key string) (string, error) {
	var scope string
	if len(x.cfg.Scope) > 0 {
		var err error
		if scope, err = joinParts(r, x.cfg.Scope); err != nil {
			return "", err
		}
	}
	h := sha256.New()
	writeFields(h, recordDomain, method, route, scope, key)
	return "{" + sum(h) + "}", nil
}

// RouteTemplate is route, a router's template, in the one spelling the
// record's key and the fingerprint hold, so that a retry that reaches
// another framework serving the same route finds the same record: each
// path parameter is ":name" whichever way the router writes it (gin, echo
// and fiber ":id"; ServeMux and chi "{id}", "{id:[0-9]+}"), a catch-all
// is "*" ("*path", "{rest...}", fiber's "+"), and ServeMux's "{$}" (the
// path ends there) is nothing. Everything else is kept as it is.
func RouteTemplate(route string) string {
	if !strings.ContainsAny(route, "{*+") {
		return route
	}
	segs := strings.Split(route, "/")
	for i, s := range segs {
		switch {
		case s == "{$}":
			segs[i] = ""
		case strings.HasPrefix(s, "*"), s == "+", strings.HasPrefix(s, "{") && strings.HasSuffix(s, "...}"):
			segs[i] = "*"
		case len(s) > 2 && s[0] == '{' && s[len(s)-1] == '}' && !strings.ContainsAny(s[1:len(s)-1], "{}"):
			name, _, _ := strings.Cut(s[1:len(s)-1], ":")
			segs[i] = ":" + name
		}
	}
	return strings.Join(segs, "/")
}

// Fingerprint identifies what a request asks for, so that a key reused for
// another request is refused (422) rather than answered with the first
// one's answer: SHA-256 of its method, route template, the values of the
// route's path parameters (pathValues, in route order), canonical query
// (canonicalQuery), Content-Type and body, length-prefixed as RecordKey's
// values are. Headers other than Content-Type are not in it: a retry may
// differ in them (a new trace, a new date) and still ask for the same.
func Fingerprint(method, route, rawQuery, contentType string, body []byte, pathValues ...string) string {
	h := sha256.New()
	writeFields(h, fingerprintDomain, method, route)
	writeLen(h, len(pathValues))
	writeFields(h, pathValues...)
	writeFields(h, canonicalQuery(rawQuery), contentType)
	writeLen(h, len(body))
	h.Write(body)
	return sum(h)
}

// Fingerprint is the fingerprint of r, a request of method to route (a
// template, RouteTemplate) with body (ReadBody): Fingerprint with r's
// query, Content-Type and the values of the matched route's path
// parameters (HTTPReader.Route's names, in route order, as a Param part
// reads them: ParamValue, one spelling of an id whichever router escaped
// it; a catch-all's without a leading slash, which some routers keep), so
// "/orders/a/pay" and "/orders/b/pay" under one key are two requests
// (422), and a retry reaching another framework is the same one.
func (x *Idempotency[R]) Fingerprint(r R, method, route string, body []byte) string {
	_, names := x.rd.Route(r)
	values := make([]string, 0, len(names))
	for _, name := range names {
		v, _ := x.rd.Param(r, name)
		if d, err := ParamValue(v); err == nil {
			v = d
		}
		values = append(values, strings.TrimPrefix(v, "/"))
	}
	return Fingerprint(method, route, x.rd.RawQuery(r), x.rd.Header(r, "Content-Type"), body, values...)
}

// canonicalQuery is raw read as net/http reads it (queryPairs: the rule
// QueryValue applies) and sorted by name, the values of one name kept in
// their order (a handler reading the first value sees a change of it), each
// pair length-prefixed: "b=2&a=1" and "a=1&b=2" are one query, "a=1&a=2" and
// "a=2&a=1" two.
func canonicalQuery(raw string) string {
	type pair struct{ k, v string }
	var ps []pair
	for k, v := range queryPairs(raw) {
		ps = append(ps, pair{k, v})
	}
	slices.SortStableFunc(ps, func(a, b pair) int { return cmp.Compare(a.k, b.k) })
	var b strings.Builder
	var n [binary.MaxVarintLen64]byte
	for _, p := range ps {
		for _, s := range []string{p.k, p.v} {
			b.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
			b.WriteString(s)
		}
	}
	return b.String()
}

// writeFields writes each field to h after its length.
func writeFields(h hash.Hash, fields ...string) {
	for _, f := range fields {
		writeLen(h, len(f))
		h.Write([]byte(f))
	}
}

func writeLen(h hash.Hash, n int) {
	var b [binary.MaxVarintLen64]byte
	h.Write(b[:binary.PutUvarint(b[:], uint64(n))])
}

func sum(h hash.Hash) string { return base64.RawURLEncoding.EncodeToString(h.Sum(nil)) }
