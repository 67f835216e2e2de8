package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v5"
	"github.com/labstack/echo/v5/middleware"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/community"
	"github.com/threatd/threatd/core/firewall/proxy"
)

// Error is an HTTP error with an exact JSON body: {"error": …} plus any
// extra fields the specification asks for, and optional headers.
type Error struct {
	Status  int
	Message string
	Fields  map[string]any
	Headers map[string]string
	// Cause is logged, never shown unless put in Fields.
	Cause error
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// StatusCode implements echo.HTTPStatusCoder.
func (e *Error) StatusCode() int { return e.Status }

func (e *Error) body() map[string]any {
	b := make(map[string]any, len(e.Fields)+1)
	for k, v := range e.Fields {
		b[k] = v
	}
	b["error"] = e.Message
	return b
}

// Fixed texts of the specification (spec §7; docs/api/README.md, "Errors").
const (
	msgAuthRequired     = "Authorization required"
	msgInvalidToken     = "Invalid API token"
	msgMethodNotAllowed = "Method not allowed"
	msgInternal         = "Internal server error"
)

// tooManyRequests is a 429 with Retry-After.
func tooManyRequests(msg string, retryAfter int) *Error {
	return &Error{Status: http.StatusTooManyRequests, Message: msg,
		Headers: map[string]string{"Retry-After": strconv.Itoa(retryAfter)}}
}

// statusClientClosed is what the access log records for a request whose
// client disconnected before the answer.
const statusClientClosed = 499

// errorHandler is the one place where errors become HTTP responses.
func errorHandler(log *slog.Logger, maxBody int64, page func(*echo.Context) bool, challenged func(path string) bool) echo.HTTPErrorHandler {
	return func(c *echo.Context, err error) {
		if r, _ := echo.UnwrapResponse(c.Response()); r != nil && r.Committed {
			return
		}
		e := toHTTPError(err, maxBody)
		if e.Status == http.StatusNotFound && errors.Is(err, echo.ErrNotFound) && page != nil && page(c) {
			return // a browser's HTML 404 page
		}
		var deliberate *Error
		switch {
		case c.Request().Context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
			// The client went away first: nothing failed here, and nobody
			// reads the answer (499 as nginx logs it).
			e = &Error{Status: statusClientClosed, Message: "The client closed the request"}
		case e.Status == http.StatusServiceUnavailable && errors.As(err, &deliberate):
			// Starting, or storage restarting: the client is told to retry.
			log.Warn("request refused", "status", e.Status, "error", err.Error(),
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		case e.Status >= 500:
			log.Error("request failed", "status", e.Status, "error", err.Error(),
				"request_id", c.Response().Header().Get(echo.HeaderXRequestID))
		}
		for k, v := range e.Headers {
			c.Response().Header().Set(k, v)
		}
		if e.Status == http.StatusUnauthorized && challenged != nil && challenged(c.Request().URL.Path) {
			// Maven, docker and skopeo send credentials only when challenged.
			c.Response().Header().Set("WWW-Authenticate", `Basic realm="threatd"`)
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(e.Status)
			return
		}
		if isTAXII(c) {
			if e.Status == http.StatusUnauthorized {
				c.Response().Header().Set("WWW-Authenticate", `Basic realm="threatd TAXII", charset="UTF-8"`)
			}
			body, _ := json.Marshal(taxiiError(e))
			_ = c.Blob(e.Status, taxiiMediaType, body)
			return
		}
		_ = c.JSON(e.Status, e.body())
	}
}

// toHTTPError maps any error to its status and body.
func toHTTPError(err error, maxBody int64) *Error {
	var (
		ae    *Error
		rf    *core.RequiredFieldsError
		capE  *core.NewUserCapError
		hl    *core.HourlyLimitError
		step  *core.StepError
		fe    *core.FieldError
		ne    *core.NotFoundError
		ce    *core.ConflictError
		panic *middleware.PanicStackError
		sc    echo.HTTPStatusCoder
		xe    *core.ExporterError
		nr    *community.NoReportError
		sl    *community.SightingLimitError
		pe    *proxy.Error
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &pe):
		return &Error{Status: pe.Status, Message: pe.Message, Fields: pe.Fields, Headers: pe.Headers, Cause: pe.Cause}
	case errors.As(err, &rf):
		return &Error{Status: http.StatusBadRequest, Message: rf.Error(), Fields: map[string]any{"missing": rf.Missing}}
	case errors.As(err, &capE):
		return &Error{Status: http.StatusForbidden, Message: capE.Error(), Fields: map[string]any{
			"verified_reports": capE.Verified, "unverified_reports": capE.Unverified}}
	case errors.As(err, &hl):
		return tooManyRequests(hl.Error(), int((hl.RetryAfter+time.Second-1)/time.Second))
	case errors.As(err, &sl):
		return tooManyRequests(sl.Error(), sl.RetryAfter)
	case errors.As(err, &nr):
		return &Error{Status: http.StatusNotFound, Message: nr.Error()}
	case errors.As(err, &step):
		return &Error{Status: http.StatusInternalServerError, Message: stepMessages[step.Step], Fields: map[string]any{"details": step.Error()}, Cause: err}
	case errors.As(err, &panic):
		return &Error{Status: 500, Message: msgInternal, Fields: map[string]any{"details": "the request handler panicked; see the server log"}}
	case errors.As(err, &xe):
		// The cause (plugin paths, process errors) goes to the log only.
		switch {
		case errors.Is(xe.Kind, core.ErrExporterUnavailable):
			return &Error{Status: http.StatusServiceUnavailable, Message: fmt.Sprintf("Exporter %q is not available; try again later", xe.Exporter),
				Headers: map[string]string{"Retry-After": "5"}, Cause: err}
		case errors.Is(xe.Kind, core.ErrExporterTimeout):
			return &Error{Status: http.StatusGatewayTimeout, Message: fmt.Sprintf("Exporter %q is still starting; try again shortly", xe.Exporter),
				Headers: map[string]string{"Retry-After": "5"}, Cause: err}
		default:
			return &Error{Status: http.StatusBadGateway, Message: fmt.Sprintf("Exporter %q failed while producing the document; try again", xe.Exporter), Cause: err}
		}
	case errors.As(err, &fe):
		f := map[string]any{}
		if fe.Field != "" {
			f["field"] = fe.Field
		}
		return &Error{Status: http.StatusBadRequest, Message: fe.Error(), Fields: f}
	case errors.As(err, &ne):
		return &Error{Status: http.StatusNotFound, Message: capitalise(ne.Error())}
	case errors.Is(err, core.ErrStale):
		return &Error{Status: http.StatusConflict, Message: "The report changed while the request was processed; try again"}
	case errors.As(err, &ce) && ce.What == "threat" && ce.Meta != nil:
		return duplicateError(ce)
	case errors.As(err, &ce):
		return &Error{Status: http.StatusConflict, Message: capitalise(ce.Error())}
	case errors.Is(err, core.ErrUnauthenticated):
		return &Error{Status: http.StatusUnauthorized, Message: msgInvalidToken}
	case errors.Is(err, core.ErrForbidden):
		return &Error{Status: http.StatusForbidden, Message: capitalise(err.Error())}
	case errors.Is(err, core.ErrCorrupt):
		// Logged loudly where it is found; healthz reports it.
		return &Error{Status: http.StatusInternalServerError, Message: msgInternal,
			Fields: map[string]any{"details": "the database is damaged (see the server log)"}, Cause: err}
	case errors.Is(err, core.ErrUnavailable):
		// The cause (a plugin's socket path, a driver error) goes to the log only.
		return &Error{Status: http.StatusServiceUnavailable, Message: "Service unavailable: storage is not answering (restarting); try again shortly",
			Headers: map[string]string{"Retry-After": "1"}, Cause: err}
	case errors.As(err, &sc):
		switch code := sc.StatusCode(); code {
		case http.StatusNotFound:
			return &Error{Status: code, Message: "Not found: no such endpoint"}
		case http.StatusMethodNotAllowed:
			return &Error{Status: code, Message: msgMethodNotAllowed}
		case http.StatusRequestEntityTooLarge:
			return &Error{Status: code, Message: fmt.Sprintf("Request body too large: the limit is %d bytes", maxBody)}
		case http.StatusUnauthorized:
			return &Error{Status: code, Message: msgAuthRequired}
		default:
			if code >= 500 {
				return &Error{Status: code, Message: msgInternal, Fields: map[string]any{"details": err.Error()}}
			}
			return &Error{Status: code, Message: http.StatusText(code)}
		}
	}
	return &Error{Status: http.StatusInternalServerError, Message: msgInternal, Fields: map[string]any{"details": err.Error()}, Cause: err}
}

func capitalise(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// stepMessages are the 500 texts of spec §7 per failing storage step.
var stepMessages = map[string]string{
	core.StepLookup:        "Failed to check for existing package",
	core.StepInsertThreat:  "Failed to create threat report",
	core.StepInsertDetails: "Failed to create threat details",
	"":                     msgInternal,
}

// duplicateError is the 409 of spec §7: the existing report's id, name,
// registry (null for non-package reports) and status, and where to go instead.
func duplicateError(ce *core.ConflictError) *Error {
	var registry any
	msg := "A report for this resource already exists: use PUT /modify-threat-report to add information to it"
	if ce.Meta["report_type"] == string(core.TypePackage) {
		registry = ce.Meta["registry"]
		msg = "A report for this package already exists in this registry: use PUT /modify-threat-report to add information to it"
	}
	return &Error{Status: http.StatusConflict, Message: msg, Fields: map[string]any{
		"existingThreatId": ce.Meta["id"],
		"packageName":      ce.Meta["package_name"],
		"registry":         registry,
		"status":           ce.Meta["status"],
	}}
}

// notFound is a 404 naming what is missing.
func notFound(format string, args ...any) error {
	return &Error{Status: http.StatusNotFound, Message: fmt.Sprintf(format, args...)}
}
