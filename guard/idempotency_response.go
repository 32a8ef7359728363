package guard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/textproto"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// HeaderIdempotentReplayed marks a replayed answer: the client learns that
// its request did not run again, and that the answer is the first run's.
const HeaderIdempotentReplayed = "Idempotent-Replayed"

// Response is a handler's answer as a record stores it: its status, its
// headers and its body. A net/http-shaped adapter fills one with
// ResponseCapture; another (fiber's) fills it from its framework's
// response after the handler returned.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// defaultReplayHeaders are the headers a replay carries: what describes
// the body (Content-Type, Content-Language) or the resource the request
// made (Location, ETag, Last-Modified, Link). IdempotencyConfig.ReplayHeaders
// adds to them.
var defaultReplayHeaders = []string{"Content-Type", "Location", "ETag", "Last-Modified", "Content-Language", "Link"}

// neverReplayed says why header name must not be replayed, "" when it may
// be: a cookie would hand the first client's session to whoever retries
// (and Set-Cookie cannot be joined with commas); Date and Content-Length
// describe the message, not the answer; hop-by-hop headers describe the
// connection; a trace or request id names the first request, not the
// retry.
func neverReplayed(name string) string {
	n := strings.ToLower(name)
	switch {
	case n == "set-cookie" || n == "set-cookie2":
		return "a cookie is the first client's session"
	case n == "date" || n == "content-length":
		return "it describes the message, not the answer"
	case n == "connection" || n == "keep-alive" || n == "te" || n == "trailer" || n == "transfer-encoding" || n == "upgrade" || strings.HasPrefix(n, "proxy-"):
		return "it is hop-by-hop"
	case n == "traceparent" || n == "tracestate" || n == "baggage" || n == "b3" || strings.HasPrefix(n, "x-b3-") ||
		n == "x-request-id" || n == "x-correlation-id" || n == "request-id" || n == "x-amzn-trace-id" ||
		n == "x-cloud-trace-context" || n == "uber-trace-id" || n == "grpc-trace-bin":
		return "it names the first request, not the retry"
	case n == strings.ToLower(HeaderIdempotentReplayed):
		return "a replay sets it itself"
	}
	return ""
}

// ReplayHeader reports whether an answer's header name is stored and
// replayed on x's route: the default allow-list and the configured
// ReplayHeaders, never one neverReplayed refuses.
func (x *Idempotency[R]) ReplayHeader(name string) bool {
	return x.allowed[textproto.CanonicalMIMEHeaderKey(name)] && neverReplayed(name) == ""
}

// ErrAnswerTooLarge is the error of an answer whose body is larger than
// the route's MaxAnswer: it cannot be stored.
var ErrAnswerTooLarge = errors.New("the answer is larger than the idempotency limit")

// ErrRecord is the error of a stored record that cannot be read: written
// by another version, cut short, or not a record at all.
var ErrRecord = errors.New("lockkit: unreadable idempotency record")

// recordVersion is the first byte of an encoded Response; a change of the
// encoding gets a new one, which an older reader refuses (ErrRecord).
const recordVersion = 1

// Bounds of a decoded record, so that a garbled one costs bounded work.
const (
	maxRecordHeaders = 64
	maxRecordValues  = 64
)

// EncodeResponse is resp as x's record stores it: its status, the headers
// x replays (ReplayHeader) and its body, in a versioned, length-prefixed
// encoding (DecodeResponse reads it back). A body larger than MaxAnswer is
// ErrAnswerTooLarge; a status outside 200–999 (a final one), or a header name or value
// HTTP does not allow, an error.
func (x *Idempotency[R]) EncodeResponse(resp Response) ([]byte, error) {
	if int64(len(resp.Body)) > x.cfg.MaxAnswer {
		return nil, fmt.Errorf("%w (%d bytes)", ErrAnswerTooLarge, x.cfg.MaxAnswer)
	}
	kept := Response{Status: resp.Status, Header: http.Header{}, Body: resp.Body}
	for name, vs := range resp.Header {
		if x.ReplayHeader(name) && len(vs) > 0 {
			kept.Header[textproto.CanonicalMIMEHeaderKey(name)] = append(kept.Header[textproto.CanonicalMIMEHeaderKey(name)], vs...)
		}
	}
	return EncodeResponse(kept)
}

// EncodeResponse encodes resp as it is (Idempotency.EncodeResponse filters
// its headers first): version, status, headers in name order, body, each
// length-prefixed. The same answer always encodes to the same bytes.
func EncodeResponse(resp Response) ([]byte, error) {
	if resp.Status < 200 || resp.Status > 999 {
		return nil, fmt.Errorf("lockkit: cannot store status %d", resp.Status)
	}
	names := make([]string, 0, len(resp.Header))
	for name, vs := range resp.Header {
		if len(vs) > 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	if len(names) > maxRecordHeaders {
		return nil, fmt.Errorf("lockkit: cannot store %d headers (at most %d)", len(names), maxRecordHeaders)
	}
	size := 1 + 3 + len(resp.Body) + 2*binary.MaxVarintLen64
	for _, name := range names {
		size += len(name) + 2*binary.MaxVarintLen64
		for _, v := range resp.Header[name] {
			size += len(v) + binary.MaxVarintLen64
		}
	}
	b := make([]byte, 0, size)
	b = append(b, recordVersion)
	b = binary.AppendUvarint(b, uint64(resp.Status))
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		vs := resp.Header[name]
		if !httpguts.ValidHeaderFieldName(name) {
			return nil, fmt.Errorf("lockkit: cannot store header name %q", name)
		}
		if len(vs) > maxRecordValues {
			return nil, fmt.Errorf("lockkit: cannot store %d values of header %s (at most %d)", len(vs), name, maxRecordValues)
		}
		b = appendString(b, name)
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				return nil, fmt.Errorf("lockkit: cannot store a value of header %s", name)
			}
			b = appendString(b, v)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(resp.Body)))
	return append(b, resp.Body...), nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// DecodeResponse reads a record EncodeResponse wrote. Anything else (another
// version, a length past the end, bytes after the body, a header HTTP does
// not allow) is an error matching ErrRecord, never a panic, and costs
// work bounded by len(b).
func DecodeResponse(b []byte) (Response, error) {
	d := decoder{b: b}
	if v := d.byte(); v != recordVersion && d.err == nil {
		return Response{}, fmt.Errorf("%w: version %d", ErrRecord, v)
	}
	status := d.uvarint(999)
	if d.err == nil && status < 200 {
		d.fail("status %d", status)
	}
	resp := Response{Status: int(status)}
	n := d.uvarint(maxRecordHeaders)
	if n > 0 {
		resp.Header = make(http.Header, n)
	}
	prev := ""
	for i := uint64(0); i < n && d.err == nil; i++ {
		name := string(d.bytes())
		if d.err == nil && (!httpguts.ValidHeaderFieldName(name) || name <= prev) {
			d.fail("header %d", i)
		}
		prev = name
		nv := d.uvarint(maxRecordValues)
		if d.err == nil && nv == 0 {
			d.fail("header %s without a value", name)
		}
		vs := make([]string, 0, min(nv, maxRecordValues))
		for j := uint64(0); j < nv && d.err == nil; j++ {
			v := string(d.bytes())
			if d.err == nil && !httpguts.ValidHeaderFieldValue(v) {
				d.fail("a value of header %s", name)
			}
			vs = append(vs, v)
		}
		resp.Header[name] = vs
	}
	resp.Body = bytes.Clone(d.bytes())
	if d.err == nil && len(d.b) > 0 {
		d.fail("%d bytes after the body", len(d.b))
	}
	if d.err != nil {
		return Response{}, d.err
	}
	return resp, nil
}

// decoder reads a record, recording its first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrRecord, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("empty")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// uvarint reads a length or a count of at most limit.
func (d *decoder) uvarint(limit uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	switch {
	case n <= 0:
		d.fail("a length cut short")
		return 0
	case n != len(binary.AppendUvarint(nil, v)):
		d.fail("a length not in its shortest form") // one record, one encoding
		return 0
	case v > limit:
		d.fail("%d is more than %d", v, limit)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// bytes reads a length-prefixed field.
func (d *decoder) bytes() []byte {
	n := d.uvarint(math.MaxInt)
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail("a length of %d past the end", n)
	}
	if d.err != nil {
		return nil
	}
	s := d.b[:n]
	d.b = d.b[n:]
	return s
}

// SetHeaders sets resp's headers on h, a framework's response, as a replay
// carries them: each header's values joined by ", " (HeaderSetter sets one
// value; the replayable headers are lists or single values), never one
// that neverReplayed refuses whatever the record holds, and
// Idempotent-Replayed: true.
func (resp Response) SetHeaders(h HeaderSetter) {
	for name, vs := range resp.Header {
		if neverReplayed(name) == "" && len(vs) > 0 {
			h.Set(name, strings.Join(vs, ", "))
		}
	}
	h.Set(HeaderIdempotentReplayed, "true")
}

// Write replays resp on w: its headers (as SetHeaders, each value kept on
// its own line), its status and its body, byte for byte.
func (resp Response) Write(w http.ResponseWriter) error {
	hdr := w.Header()
	for name, vs := range resp.Header {
		if neverReplayed(name) == "" && len(vs) > 0 {
			hdr[textproto.CanonicalMIMEHeaderKey(name)] = slices.Clone(vs)
		}
	}
	hdr.Set(HeaderIdempotentReplayed, "true")
	w.WriteHeader(resp.Status)
	_, err := w.Write(resp.Body)
	return err
}

// Captured is a handler's answer as an idempotency middleware holds it
// while it decides: stored, the claim completed, then sent (Commit); or
// dropped (Discard) for the middleware's own answer, when the claim was
// taken over meanwhile. ResponseCapture is the net/http one; an adapter
// whose framework buffers the answer itself (fiber's) reads it from there.
type Captured interface {
	// Response is what the handler answered; an error matching
	// ErrAnswerTooLarge when it cannot be stored (its body passed
	// MaxAnswer, or the framework streams it).
	Response() (Response, error)
	// Commit sends the answer held back, if any is still held.
	Commit() error
	// Discard drops the answer held back, and the headers the handler set,
	// so that the middleware answers instead; false when (part of) the
	// answer was sent already (the handler flushed, or its body passed
	// MaxAnswer): then nothing else can be answered.
	Discard() bool
}

// ResponseCapture is a net/http answer writer that records what the
// handler answers and holds it back until the middleware decided
// (Commit, Discard): the final status, the headers as they were when it
// was given, and the body. Held back, an answer is only sent once its
// record is stored, so a client whose claim was taken over meanwhile is
// answered 409 instead of an answer no retry will see. A handler that
// flushes, or whose body passes the limit, streams from there on: what
// was held is sent, the rest passes through as written (an answer past
// the limit is not stored). It keeps w's Flush and unwraps to w, as
// Hold.Writer does; the two compose in either order.
type ResponseCapture struct {
	http.ResponseWriter
	limit    int64
	status   int
	header   http.Header // the headers given with the final status
	saved    http.Header // w's headers before the handler ran: Discard's
	body     bytes.Buffer
	overflow bool // the body passed the limit: not recorded
	sent     bool // the answer went on to w (Commit, Flush, overflow)
}

// CaptureResponse records and holds back what is written to w, up to
// limit bytes of body.
func CaptureResponse(w http.ResponseWriter, limit int64) *ResponseCapture {
	return &ResponseCapture{ResponseWriter: w, limit: limit, saved: w.Header().Clone()}
}

// CaptureResponse is CaptureResponse with x's MaxAnswer.
func (x *Idempotency[R]) CaptureResponse(w http.ResponseWriter) *ResponseCapture {
	return CaptureResponse(w, x.cfg.MaxAnswer)
}

// WriteHeader records a final status and the headers given with it,
// holding them back; an informational one (1xx) is passed on at once.
func (c *ResponseCapture) WriteHeader(status int) {
	switch {
	case status < 200:
		c.ResponseWriter.WriteHeader(status)
	case c.status == 0:
		c.status, c.header = status, c.ResponseWriter.Header().Clone()
	}
}

func (c *ResponseCapture) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if !c.sent && int64(c.body.Len()+len(p)) > c.limit {
		c.overflow = true
		if err := c.Commit(); err != nil {
			return 0, err
		}
		c.body = bytes.Buffer{}
	}
	if !c.sent {
		return c.body.Write(p)
	}
	n, err := c.ResponseWriter.Write(p)
	if !c.overflow {
		if int64(c.body.Len()+n) > c.limit {
			c.overflow, c.body = true, bytes.Buffer{}
		} else {
			c.body.Write(p[:n])
		}
	}
	return n, err
}

// Flush sends what is held and flushes w: a handler that flushes streams.
func (c *ResponseCapture) Flush() {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	_ = c.Commit()
	_ = http.NewResponseController(c.ResponseWriter).Flush()
}

// Unwrap is w, for http.ResponseController.
func (c *ResponseCapture) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// Status is the final status the handler gave, 0 when none yet.
func (c *ResponseCapture) Status() int { return c.status }

// Commit sends what is held back: the status with the headers it was
// given with, and the body. Nothing when the handler answered nothing (the
// framework answers its default then), or when it was sent already.
func (c *ResponseCapture) Commit() error {
	if c.sent || c.status == 0 {
		return nil
	}
	c.sent = true
	setHeader(c.ResponseWriter.Header(), c.header)
	c.ResponseWriter.WriteHeader(c.status)
	if c.body.Len() == 0 {
		return nil
	}
	_, err := c.ResponseWriter.Write(c.body.Bytes())
	return err
}

// Discard drops what is held back and restores w's headers as they were
// before the handler ran; false when the answer was sent already.
func (c *ResponseCapture) Discard() bool {
	if c.sent {
		return false
	}
	setHeader(c.ResponseWriter.Header(), c.saved)
	c.status, c.header, c.body = 0, nil, bytes.Buffer{}
	return true
}

// setHeader makes h hold what from holds, and nothing else.
func setHeader(h, from http.Header) {
	clear(h)
	for k, vs := range from {
		h[k] = slices.Clone(vs)
	}
}

// Response is what the handler answered: its status (200 when it wrote
// nothing, as net/http answers then), headers and body. It is
// ErrAnswerTooLarge when the body went past the limit: then it cannot be
// stored.
func (c *ResponseCapture) Response() (Response, error) {
	if c.overflow {
		return Response{}, fmt.Errorf("%w (%d bytes)", ErrAnswerTooLarge, c.limit)
	}
	if c.status == 0 {
		return Response{Status: http.StatusOK, Header: c.ResponseWriter.Header().Clone(), Body: []byte{}}, nil
	}
	return Response{Status: c.status, Header: c.header, Body: bytes.Clone(c.body.Bytes())}, nil
}
