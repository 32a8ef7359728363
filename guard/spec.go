package guard

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lockkit/lockkit/core"
)

// Key specs are how a configuration made of strings (MiddlewareConfig, a
// configuration file) writes a key; ParseKeys and ParseSide read such a
// configuration's key and side fields the same way for every adapter that
// has them.

// ErrSpec is returned by ParseSpec and ParseKey for a key spec they cannot
// read.
var ErrSpec = errors.New("lockkit: invalid key spec")

// PartSpec is one item of a key spec: a source (const, param, header,
// query, cookie) and a name (the literal itself for const).
type PartSpec struct {
	Source, Name string
}

// ParseSpec reads a key spec: comma-separated "source:name" items, every
// one of them required and all joined into the key in order (unlike echo's
// KeyLookup, which takes the first source that has a value), with the
// sources const, param, header, query and cookie. Spaces around items are
// ignored. The name is everything after the first colon, so "const:a:b" is
// the literal "a:b"; a literal cannot contain a comma.
func ParseSpec(spec string) ([]PartSpec, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("%w: empty; want e.g. \"const:order,param:id\"", ErrSpec)
	}
	items := strings.Split(spec, ",")
	out := make([]PartSpec, 0, len(items))
	for i, item := range items {
		item = strings.TrimSpace(item)
		src, name, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("%w: item %d %q is not source:name", ErrSpec, i+1, item)
		}
		src = strings.ToLower(strings.TrimSpace(src))
		if src != "const" {
			name = strings.TrimSpace(name)
		}
		switch src {
		case "const", "param", "header", "query", "cookie":
		default:
			return nil, fmt.Errorf("%w: item %d %q: unknown source %q (want const, param, header, query or cookie)", ErrSpec, i+1, item, src)
		}
		if name == "" {
			return nil, fmt.Errorf("%w: item %d %q has an empty name", ErrSpec, i+1, item)
		}
		out = append(out, PartSpec{Source: src, Name: name})
	}
	return out, nil
}

// ParseKey reads a key spec (ParseSpec) into the key of its parts, read by
// rd: "const:order,param:id" is Join(Const("order"), Param(rd, "id")).
func ParseKey[R any](rd HTTPReader[R], spec string) (Key[R], error) {
	parts, err := ParseParts(rd, spec)
	if err != nil {
		return Key[R]{}, err
	}
	return Join(parts...), nil
}

// ParseParts reads a key spec (ParseSpec) into its parts, read by rd: the
// parts ParseKey joins, and an idempotency scope (IdempotencyScopeSpec).
func ParseParts[R any](rd HTTPReader[R], spec string) ([]Part[R], error) {
	specs, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	parts := make([]Part[R], len(specs))
	for i, s := range specs {
		switch s.Source {
		case "const":
			parts[i] = Const[R](s.Name)
		case "param":
			parts[i] = Param(rd, s.Name)
		case "header":
			parts[i] = Header(rd, s.Name)
		case "query":
			parts[i] = Query(rd, s.Name)
		case "cookie":
			parts[i] = Cookie(rd, s.Name)
		}
	}
	return parts, nil
}

// ParseKeys reads the key fields of a configuration made of strings
// (MiddlewareConfig's KeyParts, Keys, KeyFunc and KeyFromRoute): spec (one key
// spec, ParseKey), or specs (several, each like spec, taken together), or
// whole (a whole key, Verbatim), or route (RouteKey). Exactly one must be
// set; the errors match core.ErrInvalidOption.
func ParseKeys[R any](rd HTTPReader[R], spec string, specs []string, whole func(R) (string, error), route bool) ([]Key[R], error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", core.ErrInvalidOption, fmt.Sprintf(format, args...))
	}
	switch {
	case route && (spec != "" || len(specs) > 0 || whole != nil):
		return nil, bad("more than one key source: KeyFromRoute is the whole key; leave KeyParts, Keys and KeyFunc unset")
	case route:
		return []Key[R]{RouteKey(rd)}, nil
	case len(specs) > 0 && (spec != "" || whole != nil):
		return nil, bad("Keys with KeyParts or KeyFunc; choose one")
	case spec != "" && whole != nil:
		return nil, bad("both KeyParts and KeyFunc set; choose one")
	case whole != nil:
		return []Key[R]{Verbatim("KeyFunc", whole)}, nil
	case spec != "":
		specs = []string{spec}
	case len(specs) == 0:
		return nil, bad("no key source; set KeyParts (e.g. \"const:order,param:id\"), Keys, KeyFunc or KeyFromRoute")
	}
	keys := make([]Key[R], len(specs))
	for i, s := range specs {
		k, err := ParseKey(rd, s)
		if err != nil {
			if len(specs) == 1 && spec != "" {
				return nil, fmt.Errorf("%w: KeyParts: %w", core.ErrInvalidOption, err)
			}
			return nil, fmt.Errorf("%w: Keys[%d]: %w", core.ErrInvalidOption, i, err)
		}
		keys[i] = k
	}
	return keys, nil
}

// ParseSide reads the read/write field of a configuration made of strings
// (MiddlewareConfig's ReadWrite): "" none, "method" by method
// (Config.SideByMethod), "read" or "write" one side always. Anything else is
// refused (core.ErrInvalidOption).
func ParseSide(s string) (side core.Side, byMethod bool, err error) {
	switch s {
	case "":
		return 0, false, nil
	case "method":
		return 0, true, nil
	case "read":
		return core.ReadSide, false, nil
	case "write":
		return core.WriteSide, false, nil
	}
	return 0, false, fmt.Errorf("%w: ReadWrite %q: want \"\", \"method\", \"read\" or \"write\"", core.ErrInvalidOption, s)
}
