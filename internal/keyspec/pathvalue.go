package keyspec

import (
	"errors"
	"fmt"
	"net/url"
)

// ErrPathValue is the error (400) of a path parameter that cannot name a
// resource: a control character, or an escape that does not decode.
var ErrPathValue = errors.New("path parameter is not a valid resource id")

// PathValue is the one rule every HTTP adapter applies to a path parameter
// before it becomes a key part, so the same resource gets the same key
// whatever framework serves it and however the client spelled its id:
//
//   - The value is decoded exactly once. gin and net/http's PathValue hand
//     it over decoded; echo hands it over still escaped when the request
//     path had escapes it routed on (escaped is then true). "%34%32" and
//     "42" are one id, and so are "%c3%a9" and "%C3%A9"; "%2525" is the id
//     "%25", never "%".
//   - An encoded slash is part of the id: "a%2Fb" is the id "a/b". gin does
//     not route such a request to a one-segment parameter at all (404);
//     echo, chi and net/http's ServeMux do, and the id is "a/b" there.
//   - A control character (U+0000–U+001F, U+007F) in the decoded id is
//     refused with 400: no resource id contains one, and it would reach logs
//     and keys unescaped.
//
// Nothing else is normalised: case, Unicode forms and invalid UTF-8 are
// kept byte for byte, so "ABC" and "abc", or "é" composed and decomposed,
// are different ids (as they are different ids to a handler).
func PathValue(v string, escaped bool) (string, error) {
	if escaped {
		d, err := url.PathUnescape(v)
		if err != nil {
			return "", fmt.Errorf("%w: bad escape", ErrPathValue)
		}
		v = d
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == 0x7f {
			return "", fmt.Errorf("%w: control character at byte %d", ErrPathValue, i)
		}
	}
	return v, nil
}
