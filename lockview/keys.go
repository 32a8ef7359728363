package lockview

import (
	"strconv"
	"strings"

	"github.com/lockkit/lockkit/core"
)

// maxErrText bounds an error's text as the view keeps and shows it.
const maxErrText = 1024

// show is key as the key mode shows it: raw (cut to maxKeyLen bytes and
// marked "…" when longer), core.HashKey of the whole key, or "" (hidden).
func (c *config) show(key string) string {
	switch c.keyMode {
	case KeyRaw:
		if len(key) > c.maxKeyLen {
			return strings.Clone(key[:c.maxKeyLen]) + "…"
		}
		return strings.Clone(key)
	case KeyHidden:
		return ""
	}
	return core.HashKey(key)
}

// showTracked is show for a key of the hot-key table, which keeps at most
// maxKeyLen bytes of a key: a truncated key is marked, and in KeyHashed
// mode it is the hash of those bytes (it then stands for every key that
// starts with them).
func (c *config) showTracked(key string, truncated bool) string {
	s := c.show(key)
	if truncated && c.keyMode != KeyHidden {
		s += "…"
	}
	return s
}

// scrub replaces key in an error's text by what the key mode shows, so an
// error does not print the key a hashed or hidden view keeps back: its
// quoted form (as core's errors quote it) and its place in a Redis key
// (":k:" + key) always, and any bare occurrence when the key is long
// enough not to be a common word. The text is cut to maxErrText bytes.
func (c *config) scrub(msg, key string) string {
	if c.keyMode != KeyRaw && key != "" {
		shown := c.show(key)
		if shown == "" {
			shown = "(key hidden)"
		}
		msg = strings.ReplaceAll(msg, strconv.Quote(key), strconv.Quote(shown))
		msg = strings.ReplaceAll(msg, ":k:"+key, ":k:"+shown)
		if len(key) >= 8 {
			msg = strings.ReplaceAll(msg, key, shown)
		}
	}
	if len(msg) > maxErrText {
		msg = strings.ToValidUTF8(msg[:maxErrText], "") + "…"
	}
	return msg
}
