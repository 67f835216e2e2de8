package api

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
	"github.com/threatd/threatd/core/exposure"
	"github.com/threatd/threatd/core/scan"
)

// SARIFMediaType is the media type of a SARIF log (Accept: of POST /scan).
const SARIFMediaType = "application/sarif+json"

// scanFile is POST /scan (docs/ci.md): the body is a lockfile or an SBOM,
// named by ?format=, a Content-Type, ?file= or its content; the answer
// lists its malicious packages (JSON, or SARIF when the request accepts
// application/sarif+json). Each 100 packages count as one request toward
// the per-token limit, as in a batch check.
func (s *Server) scanFile(c *echo.Context) error {
	qs, err := queryValues(c)
	if err != nil {
		return err
	}
	if err := onlyParams(qs, []string{"format", "file", "project"}); err != nil {
		return err
	}
	project, keep := qs.Get("project"), qs.Has("project")
	if keep {
		if err := exposure.CheckProject(project); err != nil {
			return err
		}
	}
	name := qs.Get("file")
	if len(name) > 1024 || strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return core.Invalid("file", "must be a file name of at most 1024 characters, without control characters")
	}
	// Charged before the work, by what it costs: one request per
	// scanBytesPerRequest of file before it is parsed (from its
	// Content-Length, before it is read, when it has one), then, once
	// parsed, one per 100 package entries in all (each entry is checked,
	// copies of one package included), less what was charged already.
	pre := 0
	if n := c.Request().ContentLength; n > 0 && n <= s.opts.ScanMaxBytes {
		pre = int(n / scanBytesPerRequest)
		if err := s.chargeScan(c, pre); err != nil {
			return err
		}
	}
	body, err := s.scanBody(c)
	if err != nil {
		return err
	}
	if pre == 0 {
		pre = len(body) / scanBytesPerRequest
		if err := s.chargeScan(c, pre); err != nil {
			return err
		}
	}
	hint := qs.Get("format")
	if hint == "" {
		hint = formatOfContentType(c.Request().Header.Get("Content-Type"))
	}
	format, err := scan.Detect(name, body, hint)
	if err != nil {
		return core.Invalid("format", "%s", err.Error())
	}
	if name == "" {
		name = defaultFileName(format)
	}
	file, err := scan.Parse(name, body, format)
	if err != nil {
		return core.Invalid("file", "%s", err.Error())
	}
	if err := s.chargeScan(c, (len(file.Packages)+99)/100-1-pre); err != nil {
		return err
	}
	ctx := c.Request().Context()
	res, err := scan.Check(ctx, s.index, []scan.File{file})
	if err != nil {
		return err
	}
	viewer := principal(c)
	site := c.Scheme() + "://" + c.Request().Host
	answer := res.Answer(viewer, site, s.opts.Community)
	// Each report a scan finds is a seen sighting (counted, written in batches).
	var found []string
	for _, m := range answer.Malicious {
		found = append(found, m.ThreatIDs...)
	}
	s.opts.Seen.Add(found, community.SightingSourceScan, time.Now())
	if keep {
		if err := s.keepInventory(c, project, file, answer); err != nil {
			return err
		}
	}
	if acceptsSARIF(c.Request().Header.Get("Accept")) {
		log, err := answer.SARIF(s.opts.Version, site)
		if err != nil {
			return err
		}
		var buf bytes.Buffer
		if err := log.Write(&buf); err != nil {
			return err
		}
		return c.Blob(http.StatusOK, SARIFMediaType, buf.Bytes())
	}
	return c.JSON(http.StatusOK, answer)
}

// scanBytesPerRequest is the size of file a scan counts as one request
// before it is parsed (a package-lock.json holds about 300 packages in it).
const scanBytesPerRequest = 128 << 10

// chargeScan counts cost more requests of a scan against the token's
// per-minute limit (nothing when cost is not positive).
func (s *Server) chargeScan(c *echo.Context, cost int) error {
	if cost <= 0 {
		return nil
	}
	return s.chargeToken(c, cost, " (a scan counts one request per 100 packages, and one per 128 KiB of file before it is read)")
}

// scanBody reads the request body, at most scan.max_bytes (413 past it).
func (s *Server) scanBody(c *echo.Context) ([]byte, error) {
	max := s.opts.ScanMaxBytes
	tooLarge := &Error{Status: http.StatusRequestEntityTooLarge,
		Message: fmt.Sprintf("The file is larger than %s, the most one scan reads (scan.max_bytes)", humanBytes(max))}
	if c.Request().ContentLength > max {
		return nil, tooLarge
	}
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, max+1))
	if err != nil {
		return nil, &Error{Status: http.StatusBadRequest, Message: "The request body could not be read: " + err.Error()}
	}
	if int64(len(body)) > max {
		return nil, tooLarge
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, &Error{Status: http.StatusBadRequest, Message: "The request body is empty: send the lockfile or SBOM itself as the body"}
	}
	return body, nil
}

// formatOfContentType names the format a Content-Type names, or "" for a
// generic type (JSON, text, YAML, bytes), left to detection.
func formatOfContentType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ""
	}
	if _, err := scan.ParseFormat(mt); err == nil {
		return mt
	}
	return ""
}

// acceptsSARIF says whether an Accept header asks for SARIF before JSON.
func acceptsSARIF(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || params["q"] == "0" {
			continue
		}
		if mt == SARIFMediaType {
			return true
		}
		if mt == "application/json" {
			return false
		}
	}
	return false
}

// defaultFileName names an unnamed upload in the answer.
func defaultFileName(f scan.Format) string {
	switch f {
	case scan.CycloneDX:
		return "bom.cdx.json"
	case scan.SPDX:
		return "sbom.spdx.json"
	}
	return string(f)
}

// humanBytes writes a size in the largest binary unit that divides it.
func humanBytes(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.unit)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// keepInventory replaces the project's inventory with what the scan
// listed (docs/exposure.md), and records as exposures the versions in it
// that reports refuse already.
func (s *Server) keepInventory(c *echo.Context, project string, file scan.File, answer scan.Answer) error {
	ctx := c.Request().Context()
	p := principal(c)
	inv := exposure.Inventory{Project: project, User: p.User.Email, TokenID: p.Token.ID, ScannedAt: time.Now().UTC()}
	for _, pkg := range file.Packages {
		if pkg.Version != "" {
			inv.Items = append(inv.Items, exposure.ItemOf(pkg.Registry, pkg.Name, pkg.Version, pkg.Purl))
		}
	}
	if err := s.store.SaveInventory(ctx, inv); err != nil {
		return err
	}
	for _, m := range answer.Malicious {
		it := exposure.ItemOf(m.Ecosystem, m.Name, m.Version, m.Purl)
		for _, id := range m.ThreatIDs {
			if _, err := s.store.RecordExposures(ctx, exposure.Found{ThreatID: id, Ecosystem: it.Ecosystem, Name: it.Name, Versions: []string{m.Version},
				At: inv.ScannedAt, Project: project}); err != nil {
				return err
			}
		}
	}
	return nil
}
