package webhooks

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

// The Standard Webhooks specification's published test vector (the
// signature example of its libraries' test suites).
func TestSignWebhookMatchesTheSpecificationVector(t *testing.T) {
	got, err := SignWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if err != nil || got != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("signature %q %v", got, err)
	}
	if _, err := SignWebhook("whsec_not base64!", "id", time.Unix(1, 0), nil); err == nil {
		t.Fatal("a secret that is not base64 was accepted")
	}
}

func TestNewWebhook(t *testing.T) {
	now := time.Now()
	w, err := NewWebhook("https://siem.example.com/hook", []string{"threat.verified", "withdrawn", "threat.verified"}, "PyPI", "cli", now, false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(w.Events, ",") != "verified,withdrawn" || w.Ecosystem != core.RegistryPyPI || !strings.HasPrefix(w.Secret, "whsec_") || len(w.Secret) != 6+44 {
		t.Fatalf("webhook %+v", w)
	}
	all, _ := NewWebhook("http://203.0.113.9:8080/x", nil, "", "cli", now, false)
	if len(all.Events) != 3 || all.Ecosystem != "" {
		t.Fatalf("default events %v", all.Events)
	}
	for _, c := range []struct{ url, events, eco, want string }{
		{"", "", "", "url: is required"},
		{"ftp://example.com/x", "", "", "http or https"},
		{"https://user:pw@example.com/", "", "", "user information"},
		{"https:///x", "", "", "must name a host"},
		{"https://127.0.0.1/x", "", "", "loopback"},
		{"https://[::1]/x", "", "", "loopback"},
		{"http://10.1.2.3/x", "", "", "private"},
		{"http://192.168.0.1/x", "", "", "private"},
		{"http://169.254.169.254/latest/meta-data", "", "", "link-local"},
		{"http://[fe80::1]/x", "", "", "link-local"},
		{"http://100.64.0.1/x", "", "", "special-purpose"},
		{"http://0.0.0.0/x", "", "", "not a unicast"},
		{"http://localhost:8080/x", "", "", "loopback name"},
		{"http://[::ffff:127.0.0.1]/x", "", "", "loopback"},
		{"https://example.com/x", "threat.created", "", "unknown event"},
		{"https://example.com/x", "", "cobol", "package registry"},
		{"https://example.com/" + strings.Repeat("a", MaxWebhookURL), "", "", "at most"},
	} {
		_, err := NewWebhook(c.url, strings.Split(c.events, ","), c.eco, "cli", now, false)
		var fe *core.FieldError
		if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %q %q: %v, want a field error with %q", c.url, c.events, c.eco, err, c.want)
		}
	}
	if _, err := NewWebhook("http://127.0.0.1:9/x", nil, "", "cli", now, true); err != nil {
		t.Fatalf("allow_private: %v", err)
	}
	if err := CheckWebhookAddr(netip.MustParseAddr("224.0.0.1"), true); err == nil {
		t.Fatal("multicast allowed")
	}
}

func TestDeliveryIDIsStablePerSubscriptionAndChange(t *testing.T) {
	a, b := "6f1d3c1e-0000-4000-8000-000000000001", "6f1d3c1e-0000-4000-8000-000000000002"
	first, again := DeliveryID(a, 7), DeliveryID(a, 7)
	if first != again || DeliveryID(a, 7) == DeliveryID(a, 8) || DeliveryID(a, 7) == DeliveryID(b, 7) {
		t.Fatal("delivery ids")
	}
	if id := DeliveryID(a, 7); !strings.HasPrefix(id, "msg_") || len(id) != 36 {
		t.Fatalf("id %q", id)
	}
}

func TestRetryPolicyBacksOffWithJitter(t *testing.T) {
	p := RetryPolicy{Base: time.Second, Max: time.Minute, Window: time.Hour}
	now := time.Unix(0, 0)
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 10: time.Minute, 100: time.Minute} {
		for range 50 {
			d := p.Next(now, n).Sub(now)
			if d < want/2 || d > want*3/2 {
				t.Fatalf("attempt %d: %s, want %s ± 50 %%", n, d, want)
			}
		}
	}
}
