package core

import (
	"slices"
	"testing"
)

// A url or domain check asks the domain reports of its host and its
// parents down to its public suffix, never the suffix: a report of co.uk
// or github.io names that name alone.
func TestCheckKeysStopAtPublicSuffixes(t *testing.T) {
	for _, c := range []struct {
		q    CheckQuery
		want []string
	}{
		{CheckQuery{ReportType: TypeURL, ResourceIdentifier: "https://news.bbc.co.uk/x"}, []string{"url:https://news.bbc.co.uk/x", "domain:news.bbc.co.uk", "domain:bbc.co.uk"}},
		{CheckQuery{ReportType: TypeURL, ResourceIdentifier: "http://a.b.evil.example/other"}, []string{"url:http://a.b.evil.example/other", "domain:a.b.evil.example", "domain:b.evil.example", "domain:evil.example"}},
		{CheckQuery{ReportType: TypeDomain, ResourceIdentifier: "x.evil.github.io"}, []string{"domain:x.evil.github.io", "domain:evil.github.io"}},
		{CheckQuery{ReportType: TypeDomain, ResourceIdentifier: "co.uk"}, []string{"domain:co.uk"}},
		{CheckQuery{ReportType: TypeURL, ResourceIdentifier: "https://A.Evil.GitHub.IO./x"}, []string{"url:https://a.evil.github.io/x", "domain:a.evil.github.io", "domain:evil.github.io"}},
		{CheckQuery{ReportType: TypeDomain, ResourceIdentifier: "X.Evil.GitHub.IO"}, []string{"domain:x.evil.github.io", "domain:evil.github.io"}},
		{CheckQuery{ReportType: TypeDomain, ResourceIdentifier: "4.3.2.1.in-addr.arpa"}, []string{"domain:4.3.2.1.in-addr.arpa", "domain:3.2.1.in-addr.arpa", "domain:2.1.in-addr.arpa", "domain:1.in-addr.arpa"}},
	} {
		got, err := CheckKeys(c.q)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("CheckKeys(%s %s) = %q %v, want %q", c.q.ReportType, c.q.ResourceIdentifier, got, err, c.want)
		}
	}
}
