package ordersfiber

import (
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v3"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/httpconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/lockkit/lockkit/examples/internal/otelsetup"
)

// traced makes a request a server span named for its route, "POST
// /orders/:id/pay" with http.route (what otelgin does for gin), continuing
// the trace its headers carry, and records http.server.request.duration.
// It runs first in a route's handlers, so that the lock's spans nest under
// it. No contrib instrumentation of fiber v3 is in the examples' modules,
// and converting the request to net/http for otelhttp would be what
// fiberlock exists not to do.
func traced(t otelsetup.Instruments) fiber.Handler {
	tracer := t.TracerProvider.Tracer("github.com/lockkit/lockkit/examples/internal/ordersfiber")
	duration, err := httpconv.NewServerRequestDuration(t.MeterProvider.Meter("github.com/lockkit/lockkit/examples/internal/ordersfiber"))
	if err != nil {
		panic("ordersfiber: " + err.Error()) // an instrument the SDK refuses: a programming error
	}
	return func(c fiber.Ctx) error {
		start, route, method := time.Now(), c.FullPath(), c.Method()
		ctx := t.Propagator.Extract(c.Context(), headers{&c.Request().Header})
		ctx, span := tracer.Start(ctx, method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(semconv.HTTPRequestMethodKey.String(method), semconv.HTTPRoute(route)))
		defer span.End()
		outer := c.Context()
		c.SetContext(ctx)
		err := c.Next()
		c.SetContext(outer)
		status := c.Response().StatusCode()
		if fe, ok := errors.AsType[*fiber.Error](err); ok {
			status = fe.Code
		}
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
		if status >= 500 || (err != nil && status < 400) {
			span.SetStatus(codes.Error, "")
		}
		duration.Record(ctx, time.Since(start).Seconds(), httpconv.RequestMethodAttr(method), "http",
			duration.AttrRoute(route), duration.AttrResponseStatusCode(status))
		return err
	}
}

// headers is fasthttp's request header as a propagation.TextMapCarrier.
type headers struct{ h *fasthttp.RequestHeader }

func (h headers) Get(key string) string { return string(h.h.Peek(key)) }
func (h headers) Set(key, value string) { h.h.Set(key, value) }
func (h headers) Keys() []string {
	var keys []string
	for k := range h.h.All() {
		keys = append(keys, strings.ToLower(string(k)))
	}
	return keys
}
