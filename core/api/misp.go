package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// The MISP feed (docs/misp.md): manifest.json, {uuid}.json and hashes.csv,
// the files MISP's "MISP Feed" reads.
func (s *Server) mispManifest(c *echo.Context) error {
	if s.opts.MISP == nil {
		return errNoMISP
	}
	b, err := s.opts.MISP.Manifest(c.Request().Context())
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, "application/json", b)
}

func (s *Server) mispHashes(c *echo.Context) error {
	if s.opts.MISP == nil {
		return errNoMISP
	}
	// Streamed a day at a time: the file holds every attribute of every
	// report. A failure to reach storage shows before the answer starts.
	if _, err := s.opts.MISP.Feed(c.Request().Context()); err != nil {
		return err
	}
	w := &responseWriter{c: c}
	if err := w.Start("text/csv; charset=utf-8"); err != nil {
		return err
	}
	if err := s.opts.MISP.WriteHashes(c.Request().Context(), w); err != nil {
		s.log.Error("misp hashes.csv failed after it started; connection closed", "error", err.Error())
		panic(http.ErrAbortHandler)
	}
	return nil
}

func (s *Server) mispEvent(c *echo.Context) error {
	if s.opts.MISP == nil {
		return errNoMISP
	}
	name := c.Param("event")
	id, ok := strings.CutSuffix(name, ".json")
	if !ok {
		return &Error{Status: http.StatusNotFound, Message: "Not found: the MISP feed has manifest.json, hashes.csv and <event uuid>.json"}
	}
	b, err := s.opts.MISP.Event(c.Request().Context(), id)
	if errors.Is(err, core.ErrNotFound) {
		shown := id
		if len(shown) > 64 {
			shown = shown[:64] + "…"
		}
		return &Error{Status: http.StatusNotFound, Message: fmt.Sprintf("No MISP event %q in this feed (manifest.json lists them)", shown)}
	}
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, "application/json", b)
}

var errNoMISP = &Error{Status: http.StatusServiceUnavailable, Message: "the MISP feed is not served by this daemon"}

// osvEcosystems serves ecosystems.txt, the ecosystems with an all.zip.
func (s *Server) osvEcosystems(c *echo.Context) error {
	return c.Blob(http.StatusOK, "text/plain; charset=utf-8", []byte(core.OSVEcosystemsText()))
}
