package api

import (
	"strings"
	"testing"
)

// TestDecodeNumberOutOfRange: a number too large for any float (a batch
// check's 1e400) is named as out of range, not as "must be a number, got
// number".
func TestDecodeNumberOutOfRange(t *testing.T) {
	var body struct {
		Queries []map[string]any `json:"queries"`
	}
	err := decodeBody([]byte(`{"queries":[{"version":1e400}]}`), &body)
	if err == nil || !strings.Contains(err.Error(), "queries: entry 0 member \"version\" is a number out of range: 1e400") {
		t.Fatalf("1e400: %v", err)
	}
	var typed struct {
		N float64 `json:"n"`
	}
	if err := decodeBody([]byte(`{"n":-1e999}`), &typed); err == nil || !strings.Contains(err.Error(), "n: is a number out of range: -1e999") {
		t.Fatalf("-1e999: %v", err)
	}
	if err := decodeBody([]byte(`{"n":"x"}`), &typed); err == nil || !strings.Contains(err.Error(), "must be a number, got string") {
		t.Fatalf("a string: %v", err)
	}
}
