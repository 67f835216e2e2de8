package api

import (
	"bytes"
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/osv"
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
	b, err := s.opts.MISP.Hashes(c.Request().Context())
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, "text/csv; charset=utf-8", b)
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
		return &Error{Status: http.StatusNotFound, Message: "No MISP event " + id + " in this feed (manifest.json lists them)"}
	}
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, "application/json", b)
}

var errNoMISP = &Error{Status: http.StatusServiceUnavailable, Message: "the MISP feed is not served by this daemon"}

// osvModifiedIDs serves an ecosystem's modified_id.csv, beside its all.zip
// (docs/osv.md), as OSV's bucket has it.
func (s *Server) osvModifiedIDs(registry string) echo.HandlerFunc {
	return func(c *echo.Context) error {
		each, err := s.selections.All(c.Request().Context(), registry)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := osv.ModifiedIDs(each, &b); err != nil {
			return err
		}
		return c.Blob(http.StatusOK, "text/csv; charset=utf-8", b.Bytes())
	}
}

// osvEcosystems serves ecosystems.txt, the ecosystems with an all.zip.
func (s *Server) osvEcosystems(c *echo.Context) error {
	return c.Blob(http.StatusOK, "text/plain; charset=utf-8", []byte(osv.Ecosystems()))
}

// osvFileRoutes are modified_id.csv beside each all.zip (under the OSV and
// the registry name) and ecosystems.txt.
func (s *Server) osvFileRoutes() []route {
	out := []route{{method: http.MethodGet, path: "/osv/ecosystems.txt", tier: core.TierPaid, handler: s.osvEcosystems}}
	for _, registry := range core.OSVRegistries {
		name := core.OSVEcosystems[registry]
		out = append(out, route{method: http.MethodGet, path: "/osv/" + name + "/modified_id.csv", tier: core.TierPaid, handler: s.osvModifiedIDs(registry)})
		if name != registry {
			out = append(out, route{method: http.MethodGet, path: "/osv/" + registry + "/modified_id.csv", tier: core.TierPaid, handler: s.osvModifiedIDs(registry)})
		}
	}
	return out
}
