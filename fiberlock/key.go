package fiberlock

import (
	"bytes"
	"slices"

	"github.com/gofiber/fiber/v3"

	"github.com/lockkit/lockkit/guard"
)

// Part is one part of a lock key, read from a request. Make parts with
// Const, Param, Header, Query and Cookie, and anything else with Func; Key
// joins their values with core.JoinKey, as every lockkit adapter does.
type Part struct{ p guard.Part[fiber.Ctx] }

// reader reads fiber's request, as fasthttp holds it, for the key parts of
// package guard.
type reader struct{}

func (reader) Header(c fiber.Ctx, name string) string { return c.Get(name) }
func (reader) RawQuery(c fiber.Ctx) string            { return string(c.Request().URI().QueryString()) }

// HeaderValues are every line of header name, as fasthttp keeps them.
func (reader) HeaderValues(c fiber.Ctx, name string) []string {
	vs := c.Request().Header.PeekAll(name)
	if len(vs) == 0 {
		return nil
	}
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = string(v)
	}
	return lines
}

// Cookies are the Cookie header lines as the client sent them: fasthttp
// parses cookies its own way (quotes and spaces trimmed) and gives back its
// own serialisation, so they are read from the raw header block instead,
// for guard.CookieRaw to parse as net/http does.
func (reader) Cookies(c fiber.Ctx) []string {
	var lines []string
	for raw := c.Request().Header.RawHeaders(); len(raw) > 0; {
		var line []byte
		line, raw, _ = bytes.Cut(raw, []byte("\n"))
		name, value, ok := bytes.Cut(bytes.TrimRight(line, "\r"), []byte(":"))
		if ok && bytes.EqualFold(bytes.TrimSpace(name), []byte("Cookie")) {
			lines = append(lines, string(bytes.TrimSpace(value)))
		}
	}
	return lines
}

// Param is c.Params(name) when the route c is in has that parameter.
func (reader) Param(c fiber.Ctx, name string) (string, bool) {
	if !slices.Contains(c.Route().Params, name) {
		return "", false
	}
	return c.Params(name), true
}

func (reader) Route(c fiber.Ctx) (string, []string) {
	r := c.Route()
	return r.Path, r.Params
}

// Const is a literal part: Const("order"). It panics when empty.
func Const(s string) Part { return Part{guard.Const[fiber.Ctx](s)} }

// Param is a path parameter of the route the middleware is installed on:
// Param("id") for "/orders/:id". A route without that parameter is a server
// mistake (500). Its value is decoded by guard.ParamValue whether fiber
// unescaped it (UnescapePath) or not.
func Param(name string) Part { return Part{guard.Param[fiber.Ctx](reader{}, name)} }

// Header is a request header's value as c.Get reads it: Header("X-Tenant").
func Header(name string) Part { return Part{guard.Header[fiber.Ctx](reader{}, name)} }

// Query is a query parameter's first value, decoded once as net/http
// decodes it (guard.QueryValue): Query("account").
func Query(name string) Part { return Part{guard.Query[fiber.Ctx](reader{}, name)} }

// Cookie is a cookie's value, parsed from the Cookie header as net/http
// parses it and percent-decoded once ('+' is a space), the same on every
// lockkit adapter: Cookie("session"). A value that does not decode answers
// 400.
func Cookie(name string) Part { return Part{guard.Cookie[fiber.Ctx](reader{}, name)} }

// Func is a part computed by f (from the body, the authenticated user, ...).
// Its value is one part: it is escaped like the others, so a ':' in it
// cannot forge another key. An error or "" answers 400.
func Func(f func(fiber.Ctx) (string, error)) Part {
	return Part{guard.Func("Func", f)}
}

// join is the key of parts.
func join(parts []Part) guard.Key[fiber.Ctx] {
	ps := make([]guard.Part[fiber.Ctx], len(parts))
	for i, p := range parts {
		ps[i] = p.p
	}
	return guard.Join(ps...)
}
