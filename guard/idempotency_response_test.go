package guard_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/lockkit/lockkit/guard"
)

// everyHeader is an answer carrying the allow-listed headers and every kind
// that must never be replayed.
func everyHeader() http.Header {
	return http.Header{
		"Content-Type":       {"application/json"},
		"Location":           {"/orders/42"},
		"Etag":               {`"v1"`},
		"Last-Modified":      {"Mon, 02 Jan 2006 15:04:05 GMT"},
		"Content-Language":   {"en"},
		"Link":               {`</a>; rel="next"`, `</b>; rel="prev"`},
		"X-Order-Id":         {"42"},
		"Set-Cookie":         {"session=secret; Path=/", "other=1"},
		"Date":               {"Mon, 02 Jan 2006 15:04:05 GMT"},
		"Content-Length":     {"13"},
		"Connection":         {"close"},
		"Keep-Alive":         {"timeout=5"},
		"Proxy-Authenticate": {"Basic"},
		"Transfer-Encoding":  {"chunked"},
		"Traceparent":        {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		"X-B3-Traceid":       {"80f198ee56343ba864fe8b2a57d3eff7"},
		"X-Request-Id":       {"r1"},
		"X-Fence-Token":      {"7"},
	}
}

func TestEncodeResponse(t *testing.T) {
	x, err := guard.NewIdempotency(mapReader{}, guard.IdempotencyReplayHeaders[req]("x-order-id"))
	if err != nil {
		t.Fatal(err)
	}
	resp := guard.Response{Status: 201, Header: everyHeader(), Body: []byte(`{"id":42}`)}
	b, err := x.EncodeResponse(resp)
	if err != nil {
		t.Fatal(err)
	}
	got, err := guard.DecodeResponse(b)
	if err != nil {
		t.Fatal(err)
	}
	want := http.Header{}
	for _, k := range []string{"Content-Type", "Location", "Etag", "Last-Modified", "Content-Language", "Link", "X-Order-Id"} {
		want[k] = resp.Header[k]
	}
	if got.Status != 201 || !bytes.Equal(got.Body, resp.Body) || !reflect.DeepEqual(got.Header, want) {
		t.Errorf("stored %d %v %q, want 201 %v %q", got.Status, got.Header, got.Body, want, resp.Body)
	}
	// The same answer is the same bytes, whatever the map's order.
	for range 20 {
		if again, _ := x.EncodeResponse(resp); !bytes.Equal(again, b) {
			t.Fatal("one answer, two encodings")
		}
	}
	// An empty body and no header survive too.
	for _, r := range []guard.Response{{Status: 204}, {Status: 200, Body: []byte{0, 1, 2, 0xff}}} {
		enc, err := guard.EncodeResponse(r)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := guard.DecodeResponse(enc)
		if err != nil || dec.Status != r.Status || !bytes.Equal(dec.Body, r.Body) || len(dec.Header) != 0 {
			t.Errorf("%+v read back as %+v, %v", r, dec, err)
		}
	}
	small, _ := guard.NewIdempotency(mapReader{}, guard.IdempotencyMaxAnswer[req](4))
	if _, err := small.EncodeResponse(guard.Response{Status: 200, Body: []byte("12345")}); !errors.Is(err, guard.ErrAnswerTooLarge) {
		t.Errorf("a 5-byte answer under MaxAnswer(4): %v", err)
	}
	for _, bad := range []guard.Response{{Status: 0}, {Status: 1000}, {Status: 200, Header: http.Header{"Bad Name": {"x"}}}, {Status: 200, Header: http.Header{"X": {"a\r\nb"}}}} {
		if _, err := guard.EncodeResponse(bad); err == nil {
			t.Errorf("%+v encoded", bad)
		}
	}
}

// A replay writes the stored answer byte for byte, its allow-listed
// headers and Idempotent-Replayed, and never a header that must not be
// replayed, even from a record that holds one.
func TestReplay(t *testing.T) {
	x, _ := guard.NewIdempotency[req](mapReader{})
	resp := guard.Response{Status: 201, Header: everyHeader(), Body: []byte(`{"id":42}`)}
	b, _ := x.EncodeResponse(resp)
	stored, _ := guard.DecodeResponse(b)
	forged, _ := guard.DecodeResponse(mustEncode(t, resp)) // a record holding every header
	for name, r := range map[string]guard.Response{"stored": stored, "forged": forged} {
		w := httptest.NewRecorder()
		if err := r.Write(w); err != nil {
			t.Fatal(err)
		}
		if w.Code != 201 || w.Body.String() != `{"id":42}` || w.Header().Get(guard.HeaderIdempotentReplayed) != "true" {
			t.Errorf("%s: %d %q %v", name, w.Code, w.Body.String(), w.Header())
		}
		if !reflect.DeepEqual(w.Header()["Link"], resp.Header["Link"]) || w.Header().Get("Location") != "/orders/42" {
			t.Errorf("%s: Link %q Location %q", name, w.Header()["Link"], w.Header().Get("Location"))
		}
		set := http.Header{}
		r.SetHeaders(set)
		if set.Get("Link") != strings.Join(resp.Header["Link"], ", ") || set.Get(guard.HeaderIdempotentReplayed) != "true" {
			t.Errorf("%s: SetHeaders %v", name, set)
		}
		for _, h := range []http.Header{w.Header(), set} {
			for _, never := range []string{"Set-Cookie", "Date", "Content-Length", "Connection", "Keep-Alive", "Proxy-Authenticate", "Transfer-Encoding", "Traceparent", "X-B3-Traceid", "X-Request-Id"} {
				if v := h.Values(never); len(v) > 0 {
					t.Errorf("%s: replayed %s: %q", name, never, v)
				}
			}
		}
		if name == "stored" {
			if v := w.Header().Get("X-Fence-Token"); v != "" {
				t.Errorf("a header off the allow-list was replayed: X-Fence-Token %q", v)
			}
		}
	}
}

func mustEncode(t *testing.T, r guard.Response) []byte {
	t.Helper()
	b, err := guard.EncodeResponse(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The capture records the final status, the headers given with it and the
// body, and holds them back until Commit (a flush or a body past the limit
// streams from there on).
func TestCaptureResponse(t *testing.T) {
	x, _ := guard.NewIdempotency(mapReader{}, guard.IdempotencyMaxAnswer[req](10))
	for _, tc := range []struct {
		name    string
		handler func(w http.ResponseWriter)
		status  int
		body    string
		err     error
	}{
		{"status, headers, body", func(w http.ResponseWriter) {
			w.Header().Set("Location", "/orders/1")
			w.WriteHeader(201)
			w.Header().Set("X-After", "not sent")
			_, _ = w.Write([]byte("abc"))
			_, _ = w.Write([]byte("def"))
		}, 201, "abcdef", nil},
		{"implicit 200", func(w http.ResponseWriter) { _, _ = w.Write([]byte("ok")) }, 200, "ok", nil},
		{"nothing written", func(w http.ResponseWriter) {}, 200, "", nil},
		{"1xx then final", func(w http.ResponseWriter) {
			w.Header().Set("Link", "</a>; rel=preload")
			w.WriteHeader(103)
			w.WriteHeader(202)
		}, 202, "", nil},
		{"flush", func(w http.ResponseWriter) { w.(http.Flusher).Flush(); _, _ = w.Write([]byte("x")) }, 200, "x", nil},
		{"over MaxAnswer", func(w http.ResponseWriter) { _, _ = w.Write([]byte("0123456789")); _, _ = w.Write([]byte("a")) }, 0, "", guard.ErrAnswerTooLarge},
	} {
		rec := httptest.NewRecorder()
		c := x.CaptureResponse(rec)
		tc.handler(c)
		streamed := tc.name == "flush" || tc.err != nil
		if held := rec.Body.Len() == 0 && !rec.Flushed; held == streamed {
			t.Errorf("%s: held back %v, want %v (the client got %d %q)", tc.name, held, !streamed, rec.Code, rec.Body.String())
		}
		if err := c.Commit(); err != nil {
			t.Errorf("%s: Commit: %v", tc.name, err)
		}
		got, err := c.Response()
		switch {
		case tc.err != nil && !errors.Is(err, tc.err):
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		case tc.err == nil && (err != nil || got.Status != tc.status || string(got.Body) != tc.body):
			t.Errorf("%s: %d %q %v", tc.name, got.Status, got.Body, err)
		}
		if tc.err == nil && ((rec.Code != tc.status && rec.Code != 103) || rec.Body.String() != tc.body) { // the recorder keeps a 103 as its Code
			t.Errorf("%s: the client got %d %q", tc.name, rec.Code, rec.Body.String())
		}
		if tc.err != nil && rec.Body.String() != "0123456789a" {
			t.Errorf("%s: the client got %q: a capture past its limit must still pass the answer on", tc.name, rec.Body.String())
		}
		if tc.name == "status, headers, body" && (got.Header.Get("Location") != "/orders/1" || got.Header.Get("X-After") != "") {
			t.Errorf("%s: captured headers %v", tc.name, got.Header)
		}
		if tc.name == "status, headers, body" && rec.Header().Get("X-After") != "" {
			t.Errorf("%s: a header set after the status was sent", tc.name)
		}
	}
	rec := httptest.NewRecorder()
	rec.Header().Set("Vary", "Origin") // set by a middleware before the handler
	c := x.CaptureResponse(rec)
	c.Header().Set("Set-Cookie", "s=1")
	c.WriteHeader(201)
	_, _ = c.Write([]byte("answer"))
	if !c.Discard() || c.Commit() != nil || rec.Body.Len() != 0 || rec.Header().Get("Set-Cookie") != "" || rec.Header().Get("Vary") != "Origin" {
		t.Errorf("Discard sent or kept the handler's answer: %d %q %v", rec.Code, rec.Body.String(), rec.Header())
	}
	c = x.CaptureResponse(httptest.NewRecorder())
	c.Flush()
	if c.Discard() {
		t.Error("Discard of an answer already sent")
	}
	if c := guard.CaptureResponse(httptest.NewRecorder(), 10); http.NewResponseController(c).Flush() != nil {
		t.Error("a capture hides the writer's Flush")
	}
}

// Decoding never panics, refuses what is not a record, and what it accepts
// encodes back to the same bytes.
func FuzzDecodeResponse(f *testing.F) {
	x, _ := guard.NewIdempotency[req](mapReader{})
	good, _ := x.EncodeResponse(guard.Response{Status: 201, Header: everyHeader(), Body: []byte(`{"id":42}`)})
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte{})
	f.Add([]byte{1})
	f.Add([]byte{2, 200, 1, 0, 0})
	f.Add([]byte{1, 0xc8, 0x01, 0, 3, 'a', 'b', 'c'})
	f.Add([]byte{1, 0xc8, 0x01, 1, 1, 'X', 1, 0, 0, 9})
	f.Add([]byte{1, 0xe7, 0x00, 0, 0}) // 103 spelled in two bytes: found by the fuzzer
	f.Add([]byte{1, 0xc8, 0x81, 0x00, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := guard.DecodeResponse(b)
		if err != nil {
			if !errors.Is(err, guard.ErrRecord) {
				t.Fatalf("%v does not match ErrRecord", err)
			}
			return
		}
		again, err := guard.EncodeResponse(r)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("%x decoded to %+v, which encodes to %x, %v", b, r, again, err)
		}
	})
}
