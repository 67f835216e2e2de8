package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"
)

// OpenAPI is the OpenAPI 3.1 document of the API (docs/api/README.md), kept
// by hand in the repository with the default base path; the end-to-end
// tests check the running daemon's answers against it.
//
//go:embed openapi.json
var OpenAPI []byte

// DefaultBasePath is the base path the paths of OpenAPI are written under.
const DefaultBasePath = "/functions/v1"

// openAPIFor returns OpenAPI with its paths under basePath.
func openAPIFor(basePath string) ([]byte, error) {
	if basePath == DefaultBasePath {
		return OpenAPI, nil
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(OpenAPI, &doc); err != nil {
		return nil, err
	}
	var paths map[string]json.RawMessage
	if err := json.Unmarshal(doc["paths"], &paths); err != nil {
		return nil, err
	}
	moved := make(map[string]json.RawMessage, len(paths))
	for p, item := range paths {
		if rest, ok := strings.CutPrefix(p, DefaultBasePath+"/"); ok {
			p = basePath + "/" + rest
		}
		moved[p] = item
	}
	b, err := json.Marshal(moved)
	if err != nil {
		return nil, err
	}
	doc["paths"] = b
	return json.Marshal(doc)
}

// openAPIHandler serves the document, without authentication.
func (s *Server) openAPIHandler() echo.HandlerFunc {
	doc, err := openAPIFor(s.opts.BasePath)
	if err != nil {
		panic(fmt.Sprintf("the embedded OpenAPI document does not parse: %v", err)) // a build defect, caught by the tests
	}
	return func(c *echo.Context) error {
		return c.Blob(http.StatusOK, "application/json", doc)
	}
}
