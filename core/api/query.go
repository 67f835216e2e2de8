package api

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// queryValues parses the query string strictly. url.Query drops a pair
// whose percent-escape is malformed, so "resource_identifier=%zz" used to be
// read as an absent parameter ("resource_identifier is required"); here it
// is a 400 naming that parameter. A ';' separator (refused by net/url since
// Go 1.17, and dropped the same way) is refused too.
func queryValues(c *echo.Context) (url.Values, error) {
	out := url.Values{}
	err := eachQueryPair(c.Request().URL.RawQuery, func(key, val string) {
		out[key] = append(out[key], val)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachQueryPair reads raw strictly (queryValues), giving each pair
// unescaped to f in order; a pair it refuses ends the reading.
func eachQueryPair(raw string, f func(key, val string)) error {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			return core.Invalid(k, "is not a valid parameter name: %s", escapeProblem(err))
		}
		if strings.Contains(pair, ";") {
			return core.Invalid(key, "contains ';': separate parameters with '&' and percent-encode ';' in values (%%3B)")
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			return core.Invalid(key, "has a malformed percent-escape: %s", escapeProblem(err))
		}
		f(key, val)
	}
	return nil
}

// knownParams reads raw as queryValues then onlyParams do, into one value
// per name of known (an absent one empty), without a map: the first
// unknown or repeated name is the error, after every pair is read. known
// has at most 64 names (a bit each of a word). The single check's
// parameters are read this way (a map of slices for each check was a
// tenth of the bytes the daemon allocated under the check load).
func knownParams(raw string, known []string, out []string) error {
	var seen uint64
	var problem error
	err := eachQueryPair(raw, func(key, val string) {
		i := slices.Index(known, key)
		switch {
		case problem != nil:
		case i < 0:
			problem = core.Invalid(key, "is not a known parameter (known: %s)", strings.Join(known, ", "))
		case seen&(1<<i) != 0:
			problem = core.Invalid(key, "is given more than once")
		default:
			seen |= 1 << i
			out[i] = val
		}
	})
	if err != nil {
		return err
	}
	return problem
}

func escapeProblem(err error) string {
	if e, ok := err.(url.EscapeError); ok {
		return strconv.Quote(string(e)) + " is not % followed by two hexadecimal digits"
	}
	return err.Error()
}

// MaxHeaderBytes bounds a request's header block (request line included).
// Beyond it the API answers a JSON 431; net/http's own bound
// (ServerHeaderBytes, set on the server) is larger, so that our limit answers first, and only a
// header block beyond that gets net/http's plain-text 431.
const MaxHeaderBytes = 64 << 10

// ServerHeaderBytes is the http.Server's MaxHeaderBytes: what net/http reads
// before giving up on a request with a plain-text 431.
const ServerHeaderBytes = 1 << 20

// headerLimit answers 431 when a request's headers exceed MaxHeaderBytes.
func headerLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		r := c.Request()
		n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4
		for k, vs := range r.Header {
			for _, v := range vs {
				n += len(k) + len(v) + 4
			}
		}
		if n > MaxHeaderBytes {
			c.Response().Header().Set(echo.HeaderConnection, "close")
			return &Error{Status: http.StatusRequestHeaderFieldsTooLarge,
				Message: "Request header fields too large: the limit is " + strconv.Itoa(MaxHeaderBytes) + " bytes"}
		}
		return next(c)
	}
}
