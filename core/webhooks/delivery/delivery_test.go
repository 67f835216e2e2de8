package delivery

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The address is checked where the client connects, after name resolution:
// a target whose name resolves to a loopback address (DNS rebinding) is
// refused although its URL names no address.
func TestClientRefusesPrivateAddressesAtConnectTime(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":"):]
	strict := NewClient(2*time.Second, false, nil)
	for _, u := range []string{srv.URL, "http://localhost" + port} {
		resp, err := strict.Post(u, "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s: delivered to a loopback address", u)
		}
		if !strings.Contains(err.Error(), "refused: 127.0.0.1 is a loopback address") && !strings.Contains(err.Error(), "refused: ::1 is a loopback address") {
			t.Fatalf("%s: %v", u, err)
		}
	}
	resp, err := NewClient(2*time.Second, true, nil).Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("allow_private: %v", err)
	}
	resp.Body.Close()
}

// A redirect is an answer, not followed: the target cannot send a delivery
// elsewhere.
func TestClientDoesNotFollowRedirects(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://169.254.169.254/", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	resp, err := NewClient(2*time.Second, true, nil).Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil || resp.StatusCode != http.StatusTemporaryRedirect {
		t.Fatalf("redirect: %v", err)
	}
	resp.Body.Close()
}

func TestPrintable(t *testing.T) {
	if got := printable([]byte("bad\x1b[31m\n gateway\xff")); got != "bad[31m  gateway?" {
		t.Fatalf("%q", got)
	}
}
