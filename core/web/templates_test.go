package web

import (
	"strings"
	"testing"

	"github.com/threatd/threatd/core"
)

func TestGrouped(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 29548: "29,548", 100000: "100,000",
		1000000: "1,000,000", -1234567: "-1,234,567", 9223372036854775807: "9,223,372,036,854,775,807"} {
		if got := grouped(n); got != want {
			t.Errorf("grouped(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestSubmitFormHasEveryField: the submit form has an input for every
// field of the field table (core.SubmitFields), and the error summary's
// order (formFieldOrder) names each once: a field added to the table and
// not to the form fails here, not silently on the page.
func TestSubmitFormHasEveryField(t *testing.T) {
	page, err := templateFS.ReadFile("templates/submit.html")
	if err != nil {
		t.Fatal(err)
	}
	order := map[string]int{}
	for _, name := range formFieldOrder {
		order[name]++
	}
	for _, f := range core.SubmitFields {
		if !strings.Contains(string(page), `name="`+f.Name+`"`) {
			t.Errorf("submit.html has no input named %s", f.Name)
		}
		if order[f.Name] != 1 {
			t.Errorf("formFieldOrder names %s %d times, want once", f.Name, order[f.Name])
		}
		delete(order, f.Name)
	}
	for name := range order {
		t.Errorf("formFieldOrder names %s, which is not a field", name)
	}
}
