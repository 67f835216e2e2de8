package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/blocklist"
)

// blocklist serves one format of the block lists (docs/blocklists.md),
// with its ETag: a client that has it gets 304.
func (s *Server) blocklist(c *echo.Context) error {
	if s.opts.Blocklists == nil {
		return &Error{Status: http.StatusServiceUnavailable, Message: "the block lists are not served by this daemon"}
	}
	format := c.Param("format")
	if err := blocklist.CheckFormat(format); err != nil {
		shown := format
		if len(shown) > 64 {
			shown = shown[:64] + "…"
		}
		return &Error{Status: http.StatusNotFound, Message: fmt.Sprintf("No block list %q: the formats are %s", shown, strings.Join(blocklist.Formats, ", "))}
	}
	body, etag, err := s.opts.Blocklists.List(c.Request().Context(), format)
	return s.serveList(c, bytes.NewReader(body), len(body), etag, err)
}

// suricataRules serves the Suricata rules (docs/blocklists.md), with
// their ETag.
func (s *Server) suricataRules(c *echo.Context) error {
	if s.opts.Blocklists == nil {
		return &Error{Status: http.StatusServiceUnavailable, Message: "the Suricata rules are not served by this daemon"}
	}
	// Written run by run: the runs are the rendering's own bytes, shared
	// with the next rendering where they did not change.
	rules, etag, err := s.opts.Blocklists.Suricata(c.Request().Context())
	return s.serveList(c, rules, rules.Len(), etag, err)
}

// serveList answers with a list or rules file of size bytes and its ETag
// (304 to a client that has it), or 503 while the lists are first built.
func (s *Server) serveList(c *echo.Context, body io.WriterTo, size int, etag string, err error) error {
	if errors.Is(err, blocklist.ErrFilling) {
		_, read := s.opts.Blocklists.Filled()
		return &Error{Status: http.StatusServiceUnavailable, Headers: map[string]string{"Retry-After": "5"},
			Message: fmt.Sprintf("The block lists are being built (%s read so far); try again shortly", core.Count(int(read), "verified report", "verified reports"))}
	}
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "no-cache")
	if match := c.Request().Header.Get("If-None-Match"); match != "" && etagMatches(match, etag) {
		return c.NoContent(http.StatusNotModified)
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(size))
	c.Response().WriteHeader(http.StatusOK)
	_, err = body.WriteTo(c.Response())
	return err
}

// etagMatches says whether an If-None-Match header names etag (or is *).
func etagMatches(header, etag string) bool {
	for part := range strings.SplitSeq(header, ",") {
		p := strings.TrimPrefix(strings.TrimSpace(part), "W/")
		if p == "*" || p == etag {
			return true
		}
	}
	return false
}
