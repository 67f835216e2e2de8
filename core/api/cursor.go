package api

import (
	"encoding/base64"
	"net/url"

	"github.com/threatd/threatd/core"
)

// The lists paged by a store's own position (campaigns, sightings,
// firewall decisions and held versions) give it to the client as
// next_cursor, base64url without padding, and read it back here.

// msgNotACursor is the 400 of a cursor no list of this kind gave.
const msgNotACursor = "is not a cursor of this list (use next_cursor as it was given)"

// listCursor reads the cursor parameter of qs: "" when none is given; one
// that does not decode, or that valid refuses, is 400 naming cursor with
// refused.
func listCursor(qs url.Values, refused string, valid func(raw string) bool) (string, error) {
	v := qs.Get("cursor")
	if v == "" {
		return "", nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || valid != nil && !valid(string(raw)) {
		return "", core.Invalid("cursor", "%s", refused)
	}
	return string(raw), nil
}

// encodeCursor is a store's position as next_cursor ("" stays "").
func encodeCursor(raw string) string {
	if raw == "" {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}
