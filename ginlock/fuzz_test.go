package ginlock_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/lockkit/lockkit/core"
	"github.com/lockkit/lockkit/ginlock"
)

// keyOf builds the key ginlock.Key(Const("t"), Header("X-A"), Query("q"),
// Param("id")) gives for a gin request carrying these values.
func keyOf(h, q, id string) (string, error) {
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(http.MethodGet, "/x?"+url.Values{"q": {q}}.Encode(), nil)
	c.Request.Header["X-A"] = []string{h} // any bytes, as a proxy might pass them
	c.Params = gin.Params{{Key: "id", Value: id}}
	return ginlock.KeyOf(c, ginlock.Const("t"), ginlock.Header("X-A"), ginlock.Query("q"), ginlock.Param("id"))
}

// decodedID is what a path parameter's key part holds: the value
// percent-decoded until no escape is left, "" past 8 decodings (refused).
func decodedID(id string) string {
	for i := 0; strings.Contains(id, "%"); i++ {
		d, err := url.PathUnescape(id)
		if err != nil {
			break
		}
		if i == 8 {
			return ""
		}
		id = d
	}
	return id
}

// controlChar reports whether s has a control character.
func controlChar(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// Hostile values (':', '\', '/', braces, unicode, 10 KB) read from a real
// gin request give exactly core.JoinKey of the values (the id decoded to its
// end), a control character in any of them is refused, and two requests
// share a key only when their values do.
func FuzzKey(f *testing.F) {
	big := strings.Repeat("x", 10<<10)
	for _, s := range [][6]string{
		{"a:b", "c", "1", "a", "b:c", "1"},
		{`a\`, ":b", "1", `a\:`, "b", "1"},
		{"a/b", "c", "{1}", "a", "b/c", "{1}"},
		{"ü日本", "é", "ß", "ü日本:é", "", "ß"},
		{big, "1", "2", big + ":1", "2", ""},
		{"\x00\xff", "%", ":", "\x00", "\xff%", ":"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5])
	}
	f.Fuzz(func(t *testing.T, h1, q1, id1, h2, q2, id2 string) {
		k1, err1 := keyOf(h1, q1, id1)
		k2, err2 := keyOf(h2, q2, id2)
		for _, c := range []struct {
			h, q, id, k string
			err         error
		}{{h1, q1, id1, k1, err1}, {h2, q2, id2, k2, err2}} {
			id := decodedID(c.id)
			if c.h == "" || c.q == "" || id == "" || controlChar(c.h+c.q+id) {
				if !errors.Is(c.err, core.ErrInvalidKey) {
					t.Fatalf("(%q %q %q), a part empty or with a control character, gave %q, %v", c.h, c.q, c.id, c.k, c.err)
				}
				continue
			}
			if want, _ := core.JoinKey("t", c.h, c.q, id); c.err != nil || c.k != want {
				t.Fatalf("(%q %q %q): key %q %v, want %q", c.h, c.q, c.id, c.k, c.err, want)
			}
		}
		same := h1 == h2 && q1 == q2 && decodedID(id1) == decodedID(id2)
		if err1 == nil && err2 == nil && (k1 == k2) != same {
			t.Fatalf("(%q,%q,%q) and (%q,%q,%q): keys %q and %q", h1, q1, id1, h2, q2, id2, k1, k2)
		}
	})
}
