package firewall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// Unjudgeable is a request the firewall refuses because it cannot judge
// it: a name or version the registry would not accept, or a path whose
// meaning depends on how the upstream resolves it. What cannot be judged
// is never passed on (docs/firewall.md, "What the firewall refuses").
type Unjudgeable struct {
	Registry string
	// What names the part that could not be judged ("package name", "path").
	What   string
	Value  string
	Reason string
}

// Error implements error.
func (e *Unjudgeable) Error() string {
	v := e.Value
	if len(v) > 200 {
		v = v[:200] + "…"
	}
	return fmt.Sprintf("The %s firewall cannot judge the %s %q: %s; it refuses what it cannot judge rather than pass it upstream", e.Registry, e.What, v, e.Reason)
}

// CannotJudge returns the *Unjudgeable of value, the what of a request to
// registry's firewall, with the reason (a format and its arguments).
func CannotJudge(registry, what, value, reason string, args ...any) error {
	return &Unjudgeable{Registry: registry, What: what, Value: value, Reason: fmt.Sprintf(reason, args...)}
}

// CleanPath checks an escaped path that is passed upstream as it is (npm's
// /-/ endpoints, Go's /sumdb/) and returns it re-escaped: every segment,
// once decoded, must be non-empty, neither "." nor "..", and made of
// letters, digits and -._~!@$+=:, only (characters a path carries as they
// are), so that the upstream resolves exactly the path the firewall judged:
// no %2e%2e, no %2f or \ that a static server reads as a separator, no ;
// that Java servers strip. The path is returned decoded, which is its one
// spelling.
func CleanPath(registry, escaped string) (string, error) {
	if escaped == "" {
		return "", nil
	}
	segs := strings.Split(escaped, "/")
	for i, s := range segs {
		dec, err := url.PathUnescape(s)
		if err != nil {
			return "", CannotJudge(registry, "path", escaped, "a segment is not valid percent-encoding")
		}
		switch {
		case dec == "" && i == len(segs)-1 && i > 0:
			// a trailing slash
		case dec == "" || dec == "." || dec == "..":
			return "", CannotJudge(registry, "path", escaped, "it has an empty, . or .. segment")
		case strings.IndexFunc(dec, func(r rune) bool { return !safePathRune(r) }) >= 0:
			return "", CannotJudge(registry, "path", escaped, "a segment holds a character other than letters, digits and -._~!@$+=:,")
		}
		segs[i] = dec
	}
	return strings.Join(segs, "/"), nil
}

func safePathRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~!@$+=:,", r)
}

// NamePart says whether s is one part of a package path that the firewall
// passes on as it is: 1 to 255 letters, digits and the characters of
// extra, neither "." nor ".." (Maven's and NuGet's parts: ".-_+";
// RubyGems' names and files: ".-_").
func NamePart(s, extra string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(extra, c) >= 0) {
			return false
		}
	}
	return true
}

// postMark separates a POST request string's URL from its body.
const postMark = "\x00POST\x00"

// PostRequest is the request string of a POST of a JSON body to url: the
// firewall's cache sends it, and keeps its answer by the URL and the
// body, so that a POST search (the VS Code gallery's extensionquery) is
// read, kept and rewritten as a document is.
func PostRequest(url string, body []byte) string { return url + postMark + string(body) }

// SplitRequest reads a request string: the URL, and for a POST its body.
func SplitRequest(s string) (url string, body []byte, post bool) {
	u, b, post := strings.Cut(s, postMark)
	return u, []byte(b), post
}

// MarshalJSON writes v as JSON as registries write their documents: < >
// and & as they are (not \u003c), without a final newline. A rewritten
// document keeps what the upstream wrote.
func MarshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
