package web

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// fieldLabels are the submit form's labels, by JSON name (core/fields.txt):
// errors name the field as the form does, not as the API does.
var fieldLabels = func() map[string]string {
	out := map[string]string{}
	for _, f := range core.SubmitFields {
		out[f.Name] = f.Label
	}
	return out
}()

// humanFields rewrites the API's field names in a message as the form's
// labels ("must not be before first_seen" → "… before First seen").
var humanFields = func() *strings.Replacer {
	var pairs []string
	for k, v := range fieldLabels {
		pairs = append(pairs, k, v)
	}
	return strings.NewReplacer(pairs...)
}()

// formErrors turns validation problems into one message per form field,
// each starting with the field's label.
func formErrors(problems []error) map[string]string {
	errs := map[string]string{}
	for _, p := range problems {
		var rf *core.RequiredFieldsError
		var fe *core.FieldError
		switch {
		case errors.As(p, &rf):
			for _, f := range rf.Missing {
				errs[f] = fieldLabels[f] + " is required."
			}
		case errors.As(p, &fe):
			label, ok := fieldLabels[fe.Field]
			if !ok {
				label = fe.Field
			}
			if _, seen := errs[fe.Field]; !seen {
				sep := ": "
				for _, verb := range []string{"must ", "is ", "has ", "contains ", "would "} {
					if strings.HasPrefix(fe.Message, verb) {
						sep = " "
					}
				}
				errs[fe.Field] = label + sep + humanFields.Replace(fe.Message) + "."
			}
		}
	}
	return errs
}

func (s *Site) submitForm(c *echo.Context) error {
	return s.renderSubmit(c, http.StatusOK, url.Values{"report_type": {"package"}}, nil, "", "")
}

func (s *Site) renderSubmit(c *echo.Context, status int, f url.Values, errs map[string]string, formErr, existing string) error {
	if errs == nil {
		errs = map[string]string{}
	}
	// The summary above the form lists the errors in the form's order, each
	// a link to its field.
	type fieldError struct{ Field, Message string }
	var list []fieldError
	for _, name := range formFieldOrder {
		if m, ok := errs[name]; ok {
			list = append(list, fieldError{name, m})
		}
	}
	return s.render(c, status, "submit", map[string]any{"Title": "Submit a report", "Form": f, "Errors": errs, "ErrorList": list,
		"FormError": formErr, "Existing": existing, "Types": core.ReportTypes,
		"Registries": append(append([]string{}, core.PackageRegistries...), core.ContainerRegistries...),
		"Severities": []core.Severity{core.SeverityCritical, core.SeverityHigh, core.SeverityMedium, core.SeverityLow}})
}

// formSubmission reads the form into the API's request type, so the same
// validation (core.NewThreat) applies: an empty field is an absent one;
// tags and contributors are comma-separated.
// formFieldOrder is the order of the form's fields on the page.
var formFieldOrder = []string{"report_type", "resource_identifier", "registry", "package_name", "version_info",
	"threat_description", "payload_description", "severity_level", "evidence_references", "tags", "publisher",
	"first_seen", "last_seen", "download_count", "osv_advisory_url", "contributors", "contact_email"}

func formSubmission(f url.Values) (core.Submission, map[string]string) {
	var sub core.Submission
	errs := map[string]string{}
	for _, field := range core.SubmitFields {
		v := f.Get(field.Name)
		switch field.Kind {
		case core.FieldList:
			field.SetList(&sub, commaList(v))
		case core.FieldCount:
			if v = strings.TrimSpace(v); v != "" {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					errs[field.Name] = field.Label + " must be a whole number."
				} else {
					field.SetCount(&sub, &n)
				}
			}
		default:
			v = strings.ReplaceAll(v, "\r\n", "\n") // browsers send CRLF line breaks in a textarea
			if strings.TrimSpace(v) != "" {
				field.SetText(&sub, &v)
			}
		}
	}
	return sub, errs
}

func commaList(s string) []string {
	var out []string
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// submit stores the form as a pending report with the API's rules: field
// validation, then the new-user cap (403), the hourly limit (429) and the
// duplicate (409, with a link to the existing report).
func (s *Site) submit(c *echo.Context) error {
	f, _ := c.FormValues()
	f.Del(csrfField)
	sub, errs := formSubmission(f)
	// Every field's problem at once, before the limits are counted.
	for k, v := range formErrors(core.SubmissionProblems(sub, time.Now())) {
		errs[k] = v
	}
	if len(errs) > 0 {
		return s.renderSubmit(c, http.StatusBadRequest, f, errs, "", "")
	}
	u := viewerOf(c).User
	t, err := s.reports.Submit(c.Request().Context(), core.Principal{User: u}, sub)
	var (
		fe  *core.FieldError
		ce  *core.ConflictError
		cap *core.NewUserCapError
		hl  *core.HourlyLimitError
	)
	switch {
	case err == nil:
		s.setFlash(c, "ok", "Your report was submitted. It is pending: reviewers check every report before it is published, and this page shows their decision. Until then only you and the reviewers can see it.")
		return c.Redirect(http.StatusSeeOther, "/threats/"+t.ID)
	case errors.As(err, &fe), errors.Is(err, core.ErrInvalid):
		return s.renderSubmit(c, http.StatusBadRequest, f, formErrors([]error{err}), "", "")
	case errors.As(err, &cap):
		return s.renderSubmit(c, http.StatusForbidden, f, nil, cap.Error(), "")
	case errors.As(err, &hl):
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(hl.RetryAfter.Seconds())+1))
		return s.renderSubmit(c, http.StatusTooManyRequests, f, nil, hl.Error(), "")
	case errors.As(err, &ce) && ce.What == "threat" && ce.Meta != nil:
		return s.renderSubmit(c, http.StatusConflict, f, nil,
			"A report for this resource already exists ("+ce.Meta["status"]+"): add information to it instead of submitting it again.", ce.Meta["id"])
	}
	return err
}
