package daemon_test

import (
	"strings"
	"testing"
)

// TestSightingHourLimit: each user's sightings of the hour are bounded by
// tier (limits.sightings_per_hour), whatever the token: past it a 429
// says the limit with Retry-After; another user is not affected.
func TestSightingHourLimit(t *testing.T) {
	t.Parallel()
	d := start(t, quiet+"  new_user_max_unverified: 0\n  sightings_per_hour: {free: 3, paid: 0}\n")
	tok := d.user("dev@example.com")
	other := d.user("other@example.com")
	paid := d.user("paid@example.com", "--tier", "paid")
	id := d.submit(tok, `{"report_type":"domain","resource_identifier":"limited.example","threat_description":"C2 server"}`)
	d.verify(id)
	body := `{"threat_id":"` + id + `","type":"seen"}`
	eventually(t, "the report verified", func() bool { return d.do("POST", base+"/sightings", paid, body).code == 201 })
	second := d.token("dev@example.com")
	for i := range 3 {
		token := tok
		if i == 2 {
			token = second // another token of the same user
		}
		if r := d.do("POST", base+"/sightings", token, body); r.code != 201 {
			t.Fatalf("sighting %d: %d %s", i, r.code, r.raw)
		}
	}
	r := d.do("POST", base+"/sightings", second, body)
	if r.code != 429 || r.hdr.Get("Retry-After") == "" || !strings.Contains(r.raw, "at most 3 sightings an hour per user") {
		t.Fatalf("past the limit: %d %q %s", r.code, r.hdr.Get("Retry-After"), r.raw)
	}
	if r := d.do("POST", base+"/sightings", other, body); r.code != 201 {
		t.Fatalf("another user: %d %s", r.code, r.raw)
	}
	for range 5 {
		if r := d.do("POST", base+"/sightings", paid, body); r.code != 201 {
			t.Fatalf("no limit for paid: %d %s", r.code, r.raw)
		}
	}
}
