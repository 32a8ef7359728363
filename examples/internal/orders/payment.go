package orders

import "context"

// paymentKey is the context key of a payment's reference.
type paymentKey struct{}

// WithPayment returns ctx carrying ref, the client's reference of the
// payment a Pay makes: its idempotency key. A book may record it beside
// the payment, as a payments table keeps the client's reference, so that
// an audit can find a payment applied twice; Store does not (it applies
// what it is told, as a database would), the demo's witness does.
func WithPayment(ctx context.Context, ref string) context.Context {
	if ref == "" {
		return ctx
	}
	return context.WithValue(ctx, paymentKey{}, ref)
}

// PaymentOf is the payment reference ctx carries ("" when none).
func PaymentOf(ctx context.Context) string {
	ref, _ := ctx.Value(paymentKey{}).(string)
	return ref
}
