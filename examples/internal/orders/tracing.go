package orders

import (
	"context"
	"iter"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Span names of a traced Book: each operation is one span, a child of the
// span in its context, which behind a lock is lock.hold: a trace shows the
// database work inside the lock's hold.
const (
	SpanWrite = "orders.write" // Pay, Refund, Ship, Import
	SpanRead  = "orders.read"  // Export, ExportLines
)

// Span attributes of a traced Book.
const (
	AttrOperation = attribute.Key("orders.operation") // "pay", "refund", ...
	AttrOrderID   = attribute.Key("orders.id")
	AttrToken     = attribute.Key("orders.fencing_token") // the token the write carried
)

// Traced returns b with a span around each operation but Get, from tp;
// b itself when tp is nil (telemetry off).
func Traced(b Book, tp trace.TracerProvider) Book {
	if tp == nil {
		return b
	}
	return &tracedBook{b: b, tracer: tp.Tracer("github.com/lockkit/lockkit/examples/internal/orders")}
}

type tracedBook struct {
	b      Book
	tracer trace.Tracer
}

func (t *tracedBook) start(ctx context.Context, name, op, id string, token int64) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, name, trace.WithAttributes(AttrOperation.String(op), AttrOrderID.String(id), AttrToken.Int64(token)))
}

func end(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (t *tracedBook) Get(id string) Order { return t.b.Get(id) }

func (t *tracedBook) Pay(ctx context.Context, id string, token, cents int64) (Order, error) {
	ctx, span := t.start(ctx, SpanWrite, "pay", id, token)
	o, err := t.b.Pay(ctx, id, token, cents)
	end(span, err)
	return o, err
}

func (t *tracedBook) Refund(ctx context.Context, id string, token, cents int64) (Order, error) {
	ctx, span := t.start(ctx, SpanWrite, "refund", id, token)
	o, err := t.b.Refund(ctx, id, token, cents)
	end(span, err)
	return o, err
}

func (t *tracedBook) Ship(ctx context.Context, id string, token int64) (Order, error) {
	ctx, span := t.start(ctx, SpanWrite, "ship", id, token)
	o, err := t.b.Ship(ctx, id, token)
	end(span, err)
	return o, err
}

func (t *tracedBook) Export(ctx context.Context, tenant string, token int64) (Export, error) {
	ctx, span := t.tracer.Start(ctx, SpanRead, trace.WithAttributes(AttrOperation.String("export"), AttrToken.Int64(token)))
	x, err := t.b.Export(ctx, tenant, token)
	end(span, err)
	return x, err
}

func (t *tracedBook) Transfer(ctx context.Context, from, to string, fromToken, toToken, cents int64) (Order, Order, error) {
	ctx, span := t.start(ctx, SpanWrite, "transfer", from, fromToken)
	span.SetAttributes(attribute.String("orders.to", to), attribute.Int64("orders.to_fencing_token", toToken))
	a, b, err := t.b.Transfer(ctx, from, to, fromToken, toToken, cents)
	end(span, err)
	return a, b, err
}

func (t *tracedBook) Settings(ctx context.Context, tenant string) (Settings, error) {
	ctx, span := t.tracer.Start(ctx, SpanRead, trace.WithAttributes(AttrOperation.String("settings")))
	st, err := t.b.Settings(ctx, tenant)
	end(span, err)
	return st, err
}

func (t *tracedBook) SetSettings(ctx context.Context, tenant, plan string, token int64) (Settings, error) {
	ctx, span := t.tracer.Start(ctx, SpanWrite, trace.WithAttributes(AttrOperation.String("set_settings"), AttrToken.Int64(token)))
	st, err := t.b.SetSettings(ctx, tenant, plan, token)
	end(span, err)
	return st, err
}

func (t *tracedBook) Import(ctx context.Context, id string, token int64, lines iter.Seq2[Line, error]) (Order, int, error) {
	ctx, span := t.start(ctx, SpanWrite, "import", id, token)
	o, n, err := t.b.Import(ctx, id, token, lines)
	span.SetAttributes(attribute.Int("orders.lines", n))
	end(span, err)
	return o, n, err
}

func (t *tracedBook) ExportLines(ctx context.Context, id string, send func(Line) error) (int, error) {
	ctx, span := t.start(ctx, SpanRead, "export_lines", id, 0)
	n, err := t.b.ExportLines(ctx, id, send)
	span.SetAttributes(attribute.Int("orders.lines", n))
	end(span, err)
	return n, err
}
