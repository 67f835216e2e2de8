package core

import (
	"strings"
	"testing"

	"github.com/threatd/threatd/core/ioc"
)

func TestClassifySearch(t *testing.T) {
	for _, c := range []struct {
		in       string
		kind     SearchKind
		check    ReportType // "" = no direct check
		iocType  string
		iocValue string
		name     string
	}{
		{"pkg:npm/event-stream@3.3.6", SearchPurl, TypePackage, "", "", ""},
		{"  pkg:pypi/Requests  ", SearchPurl, TypePackage, "", "", ""},
		{"https://Evil.Example.com/payload.sh", SearchURL, TypeURL, ioc.URL, "https://evil.example.com/payload.sh", ""},
		{"hxxps://evil[.]example[.]com/x", SearchURL, TypeURL, ioc.URL, "https://evil.example.com/x", ""},
		{"203.0.113.9", SearchIP, TypeIP, ioc.IP, "203.0.113.9", ""},
		{"2001:DB8::1", SearchIP, TypeIP, ioc.IP, "2001:db8::1", ""},
		{"[2001:db8::1]", SearchIP, TypeIP, ioc.IP, "2001:db8::1", ""},
		{"203[.]0[.]113[.]9", SearchIP, TypeIP, ioc.IP, "203.0.113.9", ""},
		{"exfil.example.com", SearchDomain, TypeDomain, ioc.Domain, "exfil.example.com", "exfil.example.com"},
		{"EXFIL.Example.COM", SearchDomain, TypeDomain, ioc.Domain, "exfil.example.com", "EXFIL.Example.COM"},
		{"socket.io", SearchDomain, TypeDomain, ioc.Domain, "socket.io", "socket.io"},
		{"bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", SearchWallet, TypeWallet, ioc.Wallet, "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", ""},
		{"0x52908400098527886E0F7030069857D2E4169EE7", SearchWallet, TypeWallet, ioc.Wallet, "", ""},
		{"1BoatSLRHtKNngkdXEeobR76b53LETtpyT", SearchWallet, TypeWallet, ioc.Wallet, "1BoatSLRHtKNngkdXEeobR76b53LETtpyT", ""},
		{"ghcr.io/evil/miner:1.0", SearchContainer, TypeContainer, "", "", ""},
		{"docker.io/library/nginx@sha256:" + strings.Repeat("ab", 32), SearchContainer, TypeContainer, "", "", ""},
		{"evil/miner:latest", SearchContainer, TypeContainer, "", "", ""},
		{"github.com/evil/repo", SearchRepository, TypeRepository, ioc.URL, "https://github.com/evil/repo", "github.com/evil/repo"},
		{"event-stream", SearchName, "", "", "", "event-stream"},
		{"@evil/scoped", SearchName, "", "", "", "@evil/scoped"},
		{"org.evil:artifact", SearchName, "", "", "", "org.evil:artifact"},
		{"abcdefghijklmnopqrstuvwxyz0123", SearchName, "", "", "", "abcdefghijklmnopqrstuvwxyz0123"},
		{"lod", SearchName, "", "", "", "lod"},
		// Hostile input: markup and SQL are names to look up, never run.
		{"<script>alert(1)</script>", SearchName, "", "", "", "<script>alert(1)</script>"},
		{"javascript:alert(1)", SearchName, "", "", "", "javascript:alert(1)"},
		{"x'%20OR%201=1--", SearchName, "", "", "", "x'%20OR%201=1--"},
	} {
		p, err := ClassifySearch(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		got := ReportType("")
		if p.Check != nil {
			got = p.Check.ReportType
		}
		if p.Kind != c.kind || got != c.check || p.IndicatorType != c.iocType || (c.iocValue != "" && p.IndicatorValue != c.iocValue) || p.Name != c.name {
			t.Errorf("%q: kind %s check %q indicator %s %q name %q; want %s %q %s %q %q", c.in, p.Kind, got, p.IndicatorType, p.IndicatorValue, p.Name,
				c.kind, c.check, c.iocType, c.iocValue, c.name)
		}
	}
	for _, bad := range []string{"", "   ", "a\x00b", "ftp://evil.example/x", "two words", string([]byte{0xff, 0xfe}),
		strings.Repeat("a", MaxSearchInput+1), "pkg:", "https://"} {
		p, err := ClassifySearch(bad)
		fe, ok := err.(*FieldError)
		if err == nil || !ok || fe.Field != "q" || fe.Message == "" {
			t.Errorf("%q: %+v, %v; want a FieldError on q", bad, p, err)
		}
	}
}
