package apitest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Response is a JSON answer: Body is its object (nil when empty).
type Response struct {
	Code   int
	Header http.Header
	Body   map[string]any
	Raw    string
}

// RawResponse is an answer of any media type.
type RawResponse struct {
	Code   int
	Header http.Header
	Body   []byte
}

// Do sends one request to base+path (token and body may be empty; headers
// are name, value, …), checks the exchange against the OpenAPI document
// and decodes the answer, which must be a JSON object when not empty. A
// failure to send, or an answer read short, fails t.
func Do(t testing.TB, client *http.Client, base, method, path, token, body string, headers ...string) Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, b := send(t, client, req)
	Check(t, req, []byte(body), res, b)
	r := Response{Code: res.StatusCode, Header: res.Header, Raw: string(b)}
	if len(b) > 0 && json.Unmarshal(b, &r.Body) != nil {
		t.Fatalf("%s %s: %d body is not a JSON object: %q", method, path, res.StatusCode, b)
	}
	return r
}

// Raw sends a request without a body, with headers (name, value, …), and
// returns the answer as bytes (for documents other than JSON objects).
func Raw(t testing.TB, client *http.Client, base, method, path, token string, headers ...string) RawResponse {
	t.Helper()
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, b := send(t, client, req)
	Check(t, req, nil, res, b)
	return RawResponse{Code: res.StatusCode, Header: res.Header, Body: b}
}

func send(t testing.TB, client *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer after %d bytes: %v", req.Method, req.URL.Path, len(b), err)
	}
	return res, b
}

// Get sends a GET with the token (no Authorization header when it is
// empty) and headers (name, value, …): what a package manager sends to
// the firewall. A body cut short is returned as far as it was read: a
// stream the firewall stops midway is what some tests look for. The
// exchange is checked against the OpenAPI document.
func Get(t testing.TB, client *http.Client, base, path, token string, headers ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	Check(t, req, nil, res, b)
	return res.StatusCode, res.Header, b
}

// Expect fails t unless the answer has status code and, when errText is
// not "", the error errText.
func (r Response) Expect(t testing.TB, code int, errText string) {
	t.Helper()
	if r.Code != code {
		t.Fatalf("status %d %s, want %d", r.Code, r.Raw, code)
	}
	if errText != "" && r.Body["error"] != errText {
		t.Fatalf("error %q, want %q", r.Body["error"], errText)
	}
}
