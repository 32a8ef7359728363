package adapt

import (
	"encoding/json"
	"net/http"
)

// ProblemContentType is RFC 9457's media type for error bodies.
const ProblemContentType = "application/problem+json"

// Problem is an RFC 9457 problem document.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// ProblemFor builds the problem document of an outcome. The detail names
// what failed but never the holder's metadata (it may be another tenant's).
func ProblemFor(k Kind, err error) Problem {
	status := k.HTTPStatus()
	p := Problem{Type: "about:blank", Title: http.StatusText(status), Status: status}
	switch k {
	case Contended:
		p.Detail = "the resource is locked by another request; retry later"
	case Unavailable:
		p.Detail = "the lock service is unavailable"
	case Deadline:
		p.Detail = "the request's deadline passed while waiting for the lock"
	case BadKey:
		if err != nil {
			p.Detail = err.Error()
		}
	case Misconfigured:
		p.Detail = "the lock middleware is misconfigured"
	}
	return p
}

// JSON encodes p.
func (p Problem) JSON() []byte {
	b, _ := json.Marshal(p)
	return b
}
