package web

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v5"

	"github.com/threatd/threatd/core"
)

// The submit form's text fields, by their JSON names (spec §2.1).
var formTextFields = []string{"report_type", "resource_identifier", "threat_description", "package_name", "registry",
	"publisher", "payload_description", "severity_level", "evidence_references", "contact_email", "version_info",
	"first_seen", "last_seen", "osv_advisory_url"}

func (s *Site) submitForm(c *echo.Context) error {
	return s.renderSubmit(c, http.StatusOK, url.Values{"report_type": {"package"}}, nil, "", "")
}

func (s *Site) renderSubmit(c *echo.Context, status int, f url.Values, errs map[string]string, formErr, existing string) error {
	if errs == nil {
		errs = map[string]string{}
	}
	return s.render(c, status, "submit", map[string]any{"Title": "Submit a report", "Form": f, "Errors": errs,
		"FormError": formErr, "Existing": existing, "Types": core.ReportTypes,
		"Registries": append(append([]string{}, core.PackageRegistries...), core.ContainerRegistries...),
		"Severities": []core.Severity{core.SeverityCritical, core.SeverityHigh, core.SeverityMedium, core.SeverityLow}})
}

// formSubmission reads the form into the API's request type, so the same
// validation (core.NewThreat) applies: an empty field is an absent one;
// tags and contributors are comma-separated.
func formSubmission(f url.Values) (core.Submission, map[string]string) {
	var sub core.Submission
	errs := map[string]string{}
	text := map[string]**string{
		"report_type": &sub.ReportType, "resource_identifier": &sub.ResourceIdentifier,
		"threat_description": &sub.ThreatDescription, "package_name": &sub.PackageName, "registry": &sub.Registry,
		"publisher": &sub.Publisher, "payload_description": &sub.PayloadDescription, "severity_level": &sub.SeverityLevel,
		"evidence_references": &sub.EvidenceReferences, "contact_email": &sub.ContactEmail, "version_info": &sub.VersionInfo,
		"first_seen": &sub.FirstSeen, "last_seen": &sub.LastSeen, "osv_advisory_url": &sub.OSVAdvisoryURL,
	}
	for _, name := range formTextFields {
		v := f.Get(name)
		if name == "payload_description" || name == "threat_description" {
			v = strings.ReplaceAll(v, "\r\n", "\n") // browsers send CRLF line breaks
		}
		if strings.TrimSpace(v) != "" {
			*text[name] = &v
		}
	}
	sub.Tags = commaList(f.Get("tags"))
	sub.Contributors = commaList(f.Get("contributors"))
	if v := strings.TrimSpace(f.Get("download_count")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs["download_count"] = "download_count: must be a whole number"
		} else {
			sub.DownloadCount = &n
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
		return c.Redirect(http.StatusSeeOther, "/threats/"+t.ID+"?submitted=1")
	case errors.As(err, &fe):
		return s.renderSubmit(c, http.StatusBadRequest, f, map[string]string{fe.Field: fe.Error()}, "", "")
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
