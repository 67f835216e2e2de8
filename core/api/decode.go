package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

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

// decodeBody is decodeJSON's pure part (fuzzed by FuzzSubmit). It decodes
// with encoding/json/v2's semantics (go-json-experiment/json mirrors it until
// Go 1.27 makes it standard), which refuse what encoding/json lets through:
// data after the value (`{…}]]]`), invalid UTF-8 and unpaired surrogate
// escapes (v1 silently replaces them with U+FFFD), duplicate member names
// (v1: the last one wins) and members that differ from a field's name only
// in case (v1 matches names case-insensitively, so {"report_type":…,
// "REPORT_TYPE":…} was a silent duplicate).
func decodeBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return &Error{Status: http.StatusBadRequest, Message: "Request body is empty: a JSON object is required"}
	}
	if err := json.Unmarshal(body, v, json.RejectUnknownMembers(true)); err != nil {
		return jsonError(err)
	}
	return nil
}

// jsonError turns a decoding error into a 400 that names the field.
func jsonError(err error) error {
	var se *json.SemanticError
	if !errors.As(err, &se) {
		return syntaxError(err)
	}
	field := pointerField(se.JSONPointer)
	if errors.Is(se.Err, json.ErrUnknownName) {
		return core.Invalid(field, "is not a known field")
	}
	var syn *jsontext.SyntacticError
	if errors.As(se.Err, &syn) {
		return syntaxError(syn)
	}
	got := kindName(se.JSONKind)
	if se.JSONKind == '0' && se.GoType != nil && wholeKinds[se.GoType.Kind()] {
		// A number that is not a whole one (1.5, 1e30): say which.
		v := string(se.JSONValue)
		if strings.HasPrefix(v, "-") {
			return core.Invalid(field, "must not be negative")
		}
		return core.Invalid(field, "must be a whole number, got %s", core.Shorten(v))
	}
	if field == "" {
		return &Error{Status: http.StatusBadRequest, Message: "Malformed JSON: expected an object, got " + got}
	}
	want := "a valid value"
	if se.GoType != nil {
		want = jsonTypeName(se.GoType.Kind().String())
	}
	// The field is the request's member; a value inside it is named by its
	// place ("contributors: entry 0 must be a string, got number").
	tokens := slices.Collect(se.JSONPointer.Tokens())
	where := ""
	for _, t := range tokens[1:] {
		if _, err := strconv.Atoi(t); err == nil {
			where += "entry " + t + " "
		} else {
			where += "member " + strconv.Quote(core.Shorten(t)) + " "
		}
	}
	if se.JSONKind == '0' && se.GoType != nil && numberKinds[se.GoType.Kind()] {
		// A number of the right kind that does not fit (1e400): not a
		// type mismatch, and "must be a number, got number" helps nobody.
		return core.Invalid(tokens[0], "%sis a number out of range: %s", where, core.Shorten(string(se.JSONValue)))
	}
	return core.Invalid(tokens[0], "%smust be %s, got %s", where, want, got)
}

// wholeKinds are the Go kinds a JSON number must be a whole number for.
var wholeKinds = map[reflect.Kind]bool{reflect.Int: true, reflect.Int8: true, reflect.Int16: true, reflect.Int32: true, reflect.Int64: true,
	reflect.Uint: true, reflect.Uint8: true, reflect.Uint16: true, reflect.Uint32: true, reflect.Uint64: true}

// numberKinds are the Go kinds a JSON number decodes into when it fits
// (an interface holds it as a float64).
var numberKinds = map[reflect.Kind]bool{reflect.Float32: true, reflect.Float64: true, reflect.Interface: true}

// pointerField writes a JSON pointer as a dotted field path ("" at the top).
func pointerField(p jsontext.Pointer) string {
	return strings.Join(slices.Collect(p.Tokens()), ".")
}

func kindName(k jsontext.Kind) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case '[':
		return "array"
	case '{':
		return "object"
	}
	return "another type"
}

// syntaxError names the member a syntax error is in, when it is in one.
func syntaxError(err error) error {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return &Error{Status: http.StatusBadRequest, Message: "Malformed JSON: " + err.Error()}
	}
	field := pointerField(se.JSONPointer)
	switch {
	case strings.Contains(se.Err.Error(), "after top-level value"):
		return &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf("Malformed JSON: unexpected data after the object at byte %d", se.ByteOffset)}
	case errors.Is(se.Err, jsontext.ErrDuplicateName):
		return core.Invalid(field, "is given more than once")
	case errors.Is(se.Err, io.ErrUnexpectedEOF):
		return &Error{Status: http.StatusBadRequest, Message: "Malformed JSON: unexpected end of input"}
	case strings.Contains(se.Err.Error(), "surrogate"):
		if field != "" {
			return core.Invalid(field, "contains an unpaired UTF-16 surrogate escape (byte %d of the body)", se.ByteOffset)
		}
		return &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf("Malformed JSON at byte %d: unpaired UTF-16 surrogate escape", se.ByteOffset)}
	case strings.Contains(se.Err.Error(), "UTF-8"):
		if field != "" {
			return core.Invalid(field, "is not valid UTF-8 (byte %d of the body)", se.ByteOffset)
		}
		return &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf("Malformed JSON at byte %d: invalid UTF-8", se.ByteOffset)}
	}
	return &Error{Status: http.StatusBadRequest, Message: fmt.Sprintf("Malformed JSON at byte %d: %s", se.ByteOffset, core.Shorten(se.Err.Error()))}
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
		return "boolean"
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
