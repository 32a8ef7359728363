package keyspec

import (
	"errors"
	"fmt"
	"strings"
)

// Source says where a key part comes from.
type Source string

// Sources of key parts an HTTP request offers.
const (
	Const  Source = "const"  // a literal: "const:order"
	Param  Source = "param"  // a path parameter of the matched route: "param:id"
	Header Source = "header" // a request header (first value): "header:X-Tenant"
	Query  Source = "query"  // a query parameter (first value): "query:account"
	Cookie Source = "cookie" // a cookie's value: "cookie:session"
)

// Spec is one part of a key spec: a source and a name (the literal itself
// for Const).
type Spec struct {
	Source Source
	Name   string
}

func (s Spec) String() string { return string(s.Source) + ":" + s.Name }

// ErrSyntax is returned by Parse for a spec it cannot read.
var ErrSyntax = errors.New("lockkit: invalid key spec")

// Parse reads a key spec: comma-separated "source:name" items, every one of
// them required and all of them joined into the key in order (unlike echo's
// KeyLookup, which takes the first source that has a value). Spaces around
// items are ignored. The name is everything after the first colon, so
// "const:a:b" is the literal "a:b"; a literal cannot contain a comma.
func Parse(s string) ([]Spec, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("%w: empty; want e.g. \"const:order,param:id\"", ErrSyntax)
	}
	items := strings.Split(s, ",")
	out := make([]Spec, 0, len(items))
	for i, item := range items {
		item = strings.TrimSpace(item)
		src, name, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("%w: item %d %q is not source:name", ErrSyntax, i+1, item)
		}
		sp := Spec{Source: Source(strings.ToLower(strings.TrimSpace(src))), Name: name}
		if sp.Source != Const {
			sp.Name = strings.TrimSpace(name)
		}
		switch sp.Source {
		case Const, Param, Header, Query, Cookie:
		default:
			return nil, fmt.Errorf("%w: item %d %q: unknown source %q (want const, param, header, query or cookie)", ErrSyntax, i+1, item, src)
		}
		if sp.Name == "" {
			return nil, fmt.Errorf("%w: item %d %q has an empty name", ErrSyntax, i+1, item)
		}
		out = append(out, sp)
	}
	return out, nil
}

// MustParse is Parse that panics, for constructors that panic on bad
// configuration (echo's New, gin's New).
func MustParse(pkg, s string) []Spec {
	specs, err := Parse(s)
	if err != nil {
		panic(pkg + ": " + err.Error())
	}
	return specs
}
