package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// decodeJSON reads the request body into v strictly: one JSON object, no
// unknown fields, no trailing data. Every failure is a 400 naming the problem
// (or 413 when the body exceeds the limit). The body is read as JSON whatever
// its Content-Type (see docs/decisions/0009-content-type.md).
func decodeJSON(c *echo.Context, v any) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		if isTooLarge(err) {
			return echo.ErrStatusRequestEntityTooLarge
		}
		return &Error{Status: http.StatusBadRequest, Message: "Could not read the request body"}
	}
	return decodeBody(body, v)
}

// decodeBody is decodeJSON's pure part (fuzzed by FuzzSubmit).
func decodeBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return &Error{Status: http.StatusBadRequest, Message: "Request body is empty: a JSON object is required"}
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return &Error{Status: http.StatusBadRequest, Message: "Malformed JSON: unexpected data after the object"}
	}
	return nil
}

// jsonError turns encoding/json's errors into 400s that name the field.
func jsonError(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		return &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf("Malformed JSON at byte %d: %v", syn.Offset, syn)}
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf("Malformed JSON: expected an object, got %s", typ.Value)}
		}
		return core.Invalid(field, "must be %s, got %s", jsonTypeName(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{Status: http.StatusBadRequest, Message: "Malformed JSON: unexpected end of input"}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return core.Invalid(name, "is not a known field")
	}
	return &Error{Status: http.StatusBadRequest, Message: "Malformed JSON: " + err.Error()}
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "bool":
		return "a boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		return "a number"
	}
	return "a " + kind
}

func isTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return true
	}
	var sc echo.HTTPStatusCoder
	return errors.As(err, &sc) && sc.StatusCode() == http.StatusRequestEntityTooLarge
}
