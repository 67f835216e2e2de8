package api

import (
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v5"
)

// queryParams reads raw as the other handlers do: queryValues, then
// onlyParams, then Get for each of known.
func queryParams(raw string, known []string) ([]string, error) {
	c := echo.New().NewContext(httptest.NewRequest("GET", "/check-malicious", nil), httptest.NewRecorder())
	c.Request().URL.RawQuery = raw
	qs, err := queryValues(c)
	if err != nil {
		return nil, err
	}
	if err := onlyParams(qs, known); err != nil {
		return nil, err
	}
	out := make([]string, len(known))
	for i, k := range known {
		out[i] = qs.Get(k)
	}
	return out, nil
}

// TestKnownParams holds the single check's reading of its parameters to
// queryValues and onlyParams: the same values, and the same error for
// each kind of bad query.
func TestKnownParams(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"",
		"report_type=package&resource_identifier=left-pad&ecosystem=npm",
		"resource_identifier=%40scope%2Fname&report_type=package&version=1.0.0+build&purl=pkg%3Anpm%2Fx%401&match=indicators",
		"&&report_type=url&&resource_identifier=https%3A%2F%2Fexample.invalid%2F%3Fa%3D1%26b%3D2&",
		"report_type=&resource_identifier",
		"report_type=package&report_type=url",
		"report_type=package&colour=red",
		"report_type=%zz",
		"%zz=1",
		"report_type=package;resource_identifier=x",
		"resource_identifier=a%3Bb&report_type=domain",
		"Report_Type=package",
		"report_type=package&resource_identifier=x&match=everything",
	} {
		want, wantErr := queryParams(raw, checkParams[:])
		got := make([]string, len(checkParams))
		err := knownParams(raw, checkParams[:], got)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Errorf("%q: error %v, want %v", raw, err, wantErr)
			continue
		}
		if err == nil {
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("%q: %s is %q, want %q", raw, checkParams[i], got[i], want[i])
				}
			}
		}
	}
}

// FuzzKnownParams: on any query, knownParams refuses what queryValues
// and onlyParams refuse, and reads the same values from the rest.
func FuzzKnownParams(f *testing.F) {
	for _, s := range []string{"report_type=package&resource_identifier=x", "a=1&a=2", "%zz", "x;y", "purl=pkg%3Anpm%2Fx&&version=%2B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		want, wantErr := queryParams(raw, checkParams[:])
		got := make([]string, len(checkParams))
		err := knownParams(raw, checkParams[:], got)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: error %v, want %v", raw, err, wantErr)
		}
		if err == nil {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%q: %s is %q, want %q", raw, checkParams[i], got[i], want[i])
				}
			}
		}
	})
}
