package rpckey

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/guard"
)

// FieldSource is the source of Field parts, as their errors name it.
const FieldSource = "field"

// Field is the value of a field of the request message msg(r) returns, by a
// dotted path of proto names or JSON names ("order.id", "order_id",
// "orderId"), read with protoreflect (no generated code is needed).
//
// The path is checked against each message type once (then cached on this
// part): an unknown field, a step through a repeated, map or scalar field, or
// a leaf that is not a string, an integer or an enum is the server's mistake
// (Internal, a *FieldPathError matching core.ErrKeyConfig). At run time a
// field that is not set is the caller's (InvalidArgument): an unset message
// on the way, an empty string, and for fields without explicit presence
// (plain proto3 scalars) the zero value, so order_id 0 never locks
// "order:0". Mark a field `optional` to make 0 a value.
//
// Integers are written in decimal, enums by their value name ("REGION_EU",
// as protojson does); an enum number without a name is refused
// (InvalidArgument) rather than locked under a key that a newer replica,
// knowing the name, would build differently. It panics on a path with an
// empty segment.
func Field[R any](path string, msg func(R) any) guard.Part[R] {
	segs := strings.Split(path, ".")
	for _, s := range segs {
		if s == "" {
			panic(fmt.Sprintf("lockkit: Field(%q): empty path segment", path))
		}
	}
	f := &fieldPart{path: path, segs: segs}
	return guard.NewPart(FieldSource, path, func(r R) (string, error) { return f.get(msg(r)) })
}

type fieldPart struct {
	path  string
	segs  []string
	cache sync.Map // protoreflect.MessageDescriptor → *fieldPath
}

type fieldPath struct {
	fields []protoreflect.FieldDescriptor
	err    error
}

// FieldPathError says why a Field path cannot key a message type. It
// matches core.ErrKeyConfig: the server's mistake (Internal).
type FieldPathError struct {
	Path    string
	Message protoreflect.FullName
	Reason  string
}

func (e *FieldPathError) Error() string {
	return fmt.Sprintf("lockkit: field path %q on %s: %s", e.Path, e.Message, e.Reason)
}

// Is makes errors.Is(err, core.ErrKeyConfig) true.
func (e *FieldPathError) Is(target error) bool { return target == core.ErrKeyConfig }

func (f *fieldPart) get(msg any) (string, error) {
	pm, ok := msg.(proto.Message)
	if !ok {
		if msg == nil {
			return "", fmt.Errorf("%w: Field(%q) has no message to read", core.ErrKeyConfig, f.path)
		}
		return "", fmt.Errorf("%w: Field(%q): %T is not a proto message", core.ErrKeyConfig, f.path, msg)
	}
	m := pm.ProtoReflect()
	p := f.resolve(m.Descriptor())
	if p.err != nil {
		return "", p.err
	}
	last := len(p.fields) - 1
	for _, fd := range p.fields[:last] {
		if !m.Has(fd) {
			return "", nil
		}
		m = m.Get(fd).Message()
	}
	fd := p.fields[last]
	if !m.Has(fd) {
		return "", nil
	}
	v := m.Get(fd)
	switch fd.Kind() {
	case protoreflect.StringKind:
		return v.String(), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.FormatInt(v.Int(), 10), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.FormatUint(v.Uint(), 10), nil
	case protoreflect.EnumKind:
		ev := fd.Enum().Values().ByNumber(v.Enum())
		if ev == nil {
			return "", fmt.Errorf("enum %s has no value numbered %d", fd.Enum().FullName(), v.Enum())
		}
		return string(ev.Name()), nil
	}
	return "", &FieldPathError{Path: f.path, Message: pm.ProtoReflect().Descriptor().FullName(), Reason: "unexpected kind " + fd.Kind().String()}
}

// resolve checks the path against a message type, once per type.
func (f *fieldPart) resolve(md protoreflect.MessageDescriptor) *fieldPath {
	if p, ok := f.cache.Load(md); ok {
		return p.(*fieldPath)
	}
	p := &fieldPath{}
	p.fields, p.err = f.walk(md)
	v, _ := f.cache.LoadOrStore(md, p)
	return v.(*fieldPath)
}

func (f *fieldPart) walk(root protoreflect.MessageDescriptor) ([]protoreflect.FieldDescriptor, error) {
	bad := func(reason string, args ...any) error {
		return &FieldPathError{Path: f.path, Message: root.FullName(), Reason: fmt.Sprintf(reason, args...)}
	}
	fields := make([]protoreflect.FieldDescriptor, 0, len(f.segs))
	md := root
	for i, seg := range f.segs {
		fd := md.Fields().ByName(protoreflect.Name(seg))
		if fd == nil {
			fd = md.Fields().ByJSONName(seg)
		}
		if fd == nil {
			return nil, bad("%s has no field %q (by proto or JSON name)", md.FullName(), seg)
		}
		fields = append(fields, fd)
		if i < len(f.segs)-1 { // a step: a singular message
			if fd.IsList() || fd.IsMap() || fd.Message() == nil {
				return nil, bad("%q is not a singular message field, the path cannot go through it", fd.Name())
			}
			md = fd.Message()
			continue
		}
		if fd.IsList() || fd.IsMap() {
			return nil, bad("%q is a repeated or map field; a key needs one value", fd.Name())
		}
		switch fd.Kind() {
		case protoreflect.StringKind, protoreflect.EnumKind,
			protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
			protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
			protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		default:
			return nil, bad("%q is a %s field; a key part must be a string, an integer or an enum", fd.Name(), fd.Kind())
		}
	}
	return fields, nil
}
