package guard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// ErrBodyTooLarge is the error (413) of a request whose body is larger than
// the route's MaxBody: its fingerprint cannot be taken, and a request that
// cannot be told from another must not run unprotected.
var ErrBodyTooLarge = errors.New("the request body is larger than the idempotency limit")

// ReadBody reads body to its end for the fingerprint, reading at most
// limit+1 bytes: one more than limit is ErrBodyTooLarge, and nothing
// beyond it is read, so a client cannot make the server buffer more than
// limit. A nil body, or http.NoBody, is empty; a read error is returned as
// it is (the server's read timeout bounds a client that dribbles its body:
// no claim is held yet). The handler then reads the bytes again from
// NewBody.
func ReadBody(body io.Reader, limit int64) ([]byte, error) {
	if body == nil || body == http.NoBody {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w (%d bytes)", ErrBodyTooLarge, limit)
	}
	return b, nil
}

// ReadBody is ReadBody with x's MaxBody.
func (x *Idempotency[R]) ReadBody(body io.Reader) ([]byte, error) {
	return ReadBody(body, x.cfg.MaxBody)
}

// NewBody is a request body reading b, for the handler after ReadBody
// consumed the client's: http.NoBody when b is empty, so a handler that
// tests for it still can. Each call is a new reader from b's start.
func NewBody(b []byte) io.ReadCloser {
	if len(b) == 0 {
		return http.NoBody
	}
	return io.NopCloser(bytes.NewReader(b))
}
