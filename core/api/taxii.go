package api

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/taxii"
)

// TAXII 2.1 (docs/taxii.md): a read-only server outside the
// base path, paid tier, Bearer or HTTP Basic (the token as the password).

// taxiiMediaType is the media type of every TAXII answer.
const taxiiMediaType = "application/taxii+json;version=2.1"

// stixMediaType is the media type of the collections' objects.
const stixMediaType = "application/stix+json;version=2.1"

// taxiiPrefix is where the TAXII server lives.
const taxiiPrefix = "/taxii2"

// taxiiRoutes registers the TAXII endpoints: discovery, the API root, the
// collections and their objects, manifest and versions; writes are 403.
func (s *Server) taxiiRoutes(e *echo.Echo) {
	g := e.Group(taxiiPrefix, s.authenticateWith(true), s.perTokenLimit, requireTier(core.TierPaid), s.countPaid(taxiiPrefix+"/"), taxiiAccept)
	get := func(path string, h echo.HandlerFunc) {
		g.GET(path, h)
		if path != "/" {
			// Clients that drop the trailing slash get the same answer.
			g.GET(strings.TrimSuffix(path, "/"), h)
		}
	}
	get("/", s.taxiiDiscovery)
	get("/api/", s.taxiiAPIRoot)
	get("/api/collections/", s.taxiiCollections)
	get("/api/collections/:collection/", s.taxiiCollection)
	get("/api/collections/:collection/objects/", s.taxiiObjects)
	get("/api/collections/:collection/manifest/", s.taxiiManifest)
	get("/api/collections/:collection/objects/:object/", s.taxiiObject)
	get("/api/collections/:collection/objects/:object/versions/", s.taxiiVersions)
	for _, p := range []string{"/api/collections/:collection/objects/", "/api/collections/:collection/objects"} {
		g.POST(p, s.taxiiReadOnly)
	}
	for _, p := range []string{"/api/collections/:collection/objects/:object/", "/api/collections/:collection/objects/:object"} {
		g.DELETE(p, s.taxiiReadOnly)
	}
}

// taxiiAccept answers 406 unless the client accepts TAXII 2.1 (a missing
// Accept, */* and application/* accept it too). A range with q=0 refuses
// what it names (RFC 9110 §12.4.2), and the most specific range that
// names TAXII decides over a wildcard.
func taxiiAccept(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c *echo.Context) error {
		accept := c.Request().Header.Get("Accept")
		if strings.TrimSpace(accept) == "" {
			return next(c)
		}
		// best is the specificity of the most specific range that names
		// TAXII 2.1 (3 the type with version=2.1, 2 the type, 1
		// application/*, 0 */*), ok whether that range accepts it.
		best, ok := -1, false
		for _, part := range strings.Split(accept, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			spec := -1
			switch mt {
			case "*/*":
				spec = 0
			case "application/*":
				spec = 1
			case "application/taxii+json":
				if v, has := params["version"]; !has {
					spec = 2
				} else if v == "2.1" {
					spec = 3
				}
			}
			if spec < 0 || spec < best {
				continue
			}
			accepts := true
			if q, has := params["q"]; has {
				w, err := strconv.ParseFloat(q, 64)
				accepts = err == nil && w > 0
			}
			if spec > best {
				best, ok = spec, accepts
			} else {
				ok = ok || accepts
			}
		}
		if ok {
			return next(c)
		}
		return &Error{Status: http.StatusNotAcceptable, Message: "The Accept header must allow " + taxiiMediaType}
	}
}

// isTAXII says whether a request is for the TAXII server (its errors are
// TAXII error messages).
func isTAXII(c *echo.Context) bool {
	p := c.Request().URL.Path
	return p == taxiiPrefix || strings.HasPrefix(p, taxiiPrefix+"/")
}

// taxiiError is a TAXII 2.1 error message (§3.6.1).
func taxiiError(e *Error) map[string]any {
	b := map[string]any{"title": e.Message, "http_status": strconv.Itoa(e.Status)}
	if f, ok := e.Fields["field"]; ok {
		b["details"] = map[string]any{"field": f}
	}
	return b
}

// taxiiJSON writes a TAXII answer.
func taxiiJSON(c *echo.Context, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.Blob(http.StatusOK, taxiiMediaType, body)
}

func (s *Server) taxiiDiscovery(c *echo.Context) error {
	root := "https://" + c.Request().Host + taxiiPrefix + "/api/"
	return taxiiJSON(c, map[string]any{
		"title":       "threatd",
		"description": "Verified threat reports of this threatd service as STIX 2.1 objects: malicious packages, URLs, domains, IP addresses, wallets and container images.",
		"default":     root,
		"api_roots":   []string{root},
	})
}

func (s *Server) taxiiAPIRoot(c *echo.Context) error {
	return taxiiJSON(c, map[string]any{
		"title":              "threatd",
		"description":        "Verified threats, as a whole and per package ecosystem.",
		"versions":           []string{taxiiMediaType},
		"max_content_length": s.opts.MaxBodyBytes,
	})
}

func taxiiCollectionJSON(col taxii.Collection) map[string]any {
	return map[string]any{"id": col.ID, "title": col.Title, "description": col.Description, "alias": col.Alias,
		"can_read": true, "can_write": false, "media_types": []string{stixMediaType}}
}

func (s *Server) taxiiCollections(c *echo.Context) error {
	var out []map[string]any
	for _, col := range taxii.Collections() {
		out = append(out, taxiiCollectionJSON(col))
	}
	return taxiiJSON(c, map[string]any{"collections": out})
}

// collection finds the path's collection (by id or alias): 404 otherwise.
func collection(c *echo.Context) (taxii.Collection, error) {
	key := c.Param("collection")
	col, ok := taxii.FindCollection(key)
	if !ok {
		return col, &Error{Status: http.StatusNotFound, Message: "Collection not found: " + core.Shorten(key)}
	}
	return col, nil
}

func (s *Server) taxiiCollection(c *echo.Context) error {
	col, err := collection(c)
	if err != nil {
		return err
	}
	if _, err := queryValues(c); err != nil {
		return err
	}
	return taxiiJSON(c, taxiiCollectionJSON(col))
}

func (s *Server) taxiiReadOnly(c *echo.Context) error {
	if _, err := collection(c); err != nil {
		return err
	}
	return &Error{Status: http.StatusForbidden, Message: "This collection is read-only (can_write is false)"}
}

// taxiiQuery reads a request's filters; allowed names the parameters the
// endpoint takes.
func (s *Server) taxiiQuery(c *echo.Context, allowed ...string) (taxii.Query, error) {
	col, err := collection(c)
	if err != nil {
		return taxii.Query{}, err
	}
	q := taxii.Query{Collection: col, Limit: min(100, s.pageMax())}
	qs, err := queryValues(c)
	if err != nil {
		return q, err
	}
	for k, v := range qs {
		if !slices.Contains(allowed, k) {
			return q, core.Invalid(k, "is not a known parameter here (known: %s)", strings.Join(allowed, ", "))
		}
		if len(v) > 1 && !strings.HasPrefix(k, "match[") {
			return q, core.Invalid(k, "is given more than once")
		}
	}
	list := func(k string) []string {
		var out []string
		for _, v := range qs[k] {
			for _, item := range strings.Split(v, ",") {
				if item = strings.TrimSpace(item); item != "" {
					out = append(out, item)
				}
			}
		}
		return out
	}
	if v := qs.Get("added_after"); v != "" {
		if q.AddedAfter, err = taxii.ParseTimestamp("added_after", v); err != nil {
			return q, err
		}
	}
	if v := qs.Get("limit"); v != "" {
		n, err := core.ParseWhole("limit", v, 1, 1<<30)
		if err != nil {
			return q, err
		}
		// Above the server's page: the server's page (TAXII lets a server
		// return fewer).
		q.Limit = min(n, s.pageMax())
	}
	if v, given := qs["next"]; given {
		if v[0] == "" {
			return q, core.Invalid("next", "is empty: give the next value of the page before, or leave next out to start from the first page")
		}
		q.Next = v[0]
	}
	q.IDs, q.Types, q.Versions, q.SpecVersions = list("match[id]"), list("match[type]"), list("match[version]"), list("match[spec_version]")
	if len(q.IDs) > core.MaxGetThreats {
		return q, core.Invalid("match[id]", "lists more than %d ids", core.MaxGetThreats)
	}
	if err := taxii.ParseVersions(q.Versions); err != nil {
		return q, err
	}
	if id := c.Param("object"); id != "" {
		if !validSTIXID(id) {
			return q, &Error{Status: http.StatusNotFound, Message: "Object not found: " + core.Shorten(id)}
		}
		q.IDs = []string{id}
	}
	return q, nil
}

// validSTIXID says whether s has the form of a STIX id: type--UUID.
func validSTIXID(s string) bool {
	kind, id, ok := strings.Cut(s, "--")
	if !ok || kind == "" || len(kind) > 250 || strings.Trim(kind, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return false
	}
	u, err := uuid.Parse(id)
	return err == nil && u.String() == id
}

func (s *Server) pageMax() int {
	if s.opts.Feed.PageMax > 0 {
		return min(s.opts.Feed.PageMax, core.MaxGetThreats)
	}
	return 1000
}

var taxiiFilters = []string{"added_after", "limit", "next", "match[id]", "match[type]", "match[version]", "match[spec_version]"}

// page reads one page and sets the X-TAXII-Date-Added-First/Last headers.
func (s *Server) taxiiPage(c *echo.Context, q taxii.Query) (taxii.Page, error) {
	page, err := s.taxii.Page(c.Request().Context(), q)
	if err != nil {
		return page, err
	}
	if n := len(page.Objects); n > 0 {
		h := c.Response().Header()
		h.Set("X-TAXII-Date-Added-First", taxii.Timestamp(page.Objects[0].DateAdded))
		h.Set("X-TAXII-Date-Added-Last", taxii.Timestamp(page.Objects[n-1].DateAdded))
	}
	return page, nil
}

// envelope is a TAXII envelope (objects) or its manifest and versions
// forms.
func envelope(page taxii.Page) map[string]any {
	out := map[string]any{"more": page.More}
	if page.Next != "" {
		out["next"] = page.Next
	}
	return out
}

// taxiiRead reads the page a request asks for, with the filters allowed
// names. For the endpoints of one object (the path names it), an empty
// first page is 404 unless the collection holds the object and only the
// filters left it out.
func (s *Server) taxiiRead(c *echo.Context, allowed ...string) (taxii.Page, error) {
	q, err := s.taxiiQuery(c, allowed...)
	if err != nil {
		return taxii.Page{}, err
	}
	page, err := s.taxiiPage(c, q)
	if err != nil || c.Param("object") == "" || len(page.Objects) > 0 || q.Next != "" {
		return page, err
	}
	all, err := s.taxii.Page(c.Request().Context(), taxii.Query{Collection: q.Collection, IDs: q.IDs, Limit: 1})
	if err != nil {
		return page, err
	}
	if len(all.Objects) == 0 {
		return page, &Error{Status: http.StatusNotFound, Message: "Object not found: " + q.IDs[0]}
	}
	return page, nil
}

func (s *Server) taxiiObjects(c *echo.Context) error {
	page, err := s.taxiiRead(c, taxiiFilters...)
	if err != nil {
		return err
	}
	return taxiiObjectsJSON(c, page)
}

// taxiiObjectsJSON writes an objects envelope, {"more", "next", "objects"},
// with each object's JSON as the exporter wrote it. Reading the page parsed
// every object (taxii.objects), so each is one whole JSON value; encoding
// them again would only copy and re-check a page's bytes. The envelope is
// streamed through a small buffer: a page is up to core.PageBytes of
// objects, and a copy of it per reader held 4 MiB more for each one
// (TestReadAmplificationIsBounded).
func taxiiObjectsJSON(c *echo.Context, page taxii.Page) error {
	head := make([]byte, 0, 64+len(page.Next))
	head = append(head, `{"more":`...)
	head = strconv.AppendBool(head, page.More)
	if page.Next != "" {
		next, err := json.Marshal(page.Next)
		if err != nil {
			return err
		}
		head = append(append(head, `,"next":`...), next...)
	}
	if len(page.Objects) > 0 {
		head = append(head, `,"objects":[`...)
	}
	// The head, the objects with a ',' or the ']' after each, and '}'.
	size := len(head) + len(page.Objects) + 1
	for _, o := range page.Objects {
		size += len(o.JSON)
	}
	res := c.Response()
	res.Header().Set(echo.HeaderContentType, taxiiMediaType)
	res.Header().Set(echo.HeaderContentLength, strconv.Itoa(size))
	res.WriteHeader(http.StatusOK)
	w := bufio.NewWriterSize(res, taxiiWriteBuffer)
	_, _ = w.Write(head)
	if len(page.Objects) > 0 {
		for i, o := range page.Objects {
			if i > 0 {
				_ = w.WriteByte(',')
			}
			_, _ = w.Write(o.JSON)
		}
		_ = w.WriteByte(']')
	}
	_ = w.WriteByte('}')
	return w.Flush()
}

// taxiiWriteBuffer is the buffer an objects envelope is written through.
const taxiiWriteBuffer = 32 << 10

func (s *Server) taxiiManifest(c *echo.Context) error {
	page, err := s.taxiiRead(c, taxiiFilters...)
	if err != nil {
		return err
	}
	out := envelope(page)
	if len(page.Objects) > 0 {
		m := make([]map[string]any, len(page.Objects))
		for i, o := range page.Objects {
			m[i] = map[string]any{"id": o.ID, "date_added": taxii.Timestamp(o.DateAdded), "version": o.Version, "media_type": stixMediaType}
		}
		out["objects"] = m
	}
	return taxiiJSON(c, out)
}

// taxiiObject is the object endpoint: the object's versions the filters
// select; 404 when the collection has no such object.
func (s *Server) taxiiObject(c *echo.Context) error {
	page, err := s.taxiiRead(c, "added_after", "limit", "next", "match[version]", "match[spec_version]")
	if err != nil {
		return err
	}
	return taxiiObjectsJSON(c, page)
}

func (s *Server) taxiiVersions(c *echo.Context) error {
	page, err := s.taxiiRead(c, "added_after", "limit", "next", "match[spec_version]")
	if err != nil {
		return err
	}
	out := envelope(page)
	if len(page.Objects) > 0 {
		versions := make([]string, len(page.Objects))
		for i, o := range page.Objects {
			versions[i] = o.Version
		}
		out["versions"] = versions
	}
	return taxiiJSON(c, out)
}

// basicToken takes the token from HTTP Basic credentials: the password, or
// the user name when the password is empty (TIPs that have one API-key
// field put it there).
func basicToken(credentials string) (string, bool) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(credentials))
	if err != nil {
		return "", false
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return "", false
	}
	if pass == "" {
		return user, true
	}
	return pass, true
}
