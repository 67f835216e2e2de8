package core

import (
	"net/netip"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/threatd/threatd/core/ioc"
)

// SearchKind is what a search box input is taken to be.
type SearchKind string

// The kinds of search input, in the order ClassifySearch tries them.
const (
	SearchPurl       SearchKind = "purl"
	SearchURL        SearchKind = "url"
	SearchIP         SearchKind = "ip"
	SearchWallet     SearchKind = "wallet"
	SearchContainer  SearchKind = "container"
	SearchRepository SearchKind = "repository"
	SearchDomain     SearchKind = "domain"
	SearchName       SearchKind = "name"
)

// SearchPlan is how one search box input is answered (docs/web.md,
// "Search"): the direct check (check-malicious's semantics), the indicator
// look-up, and the package-name look-up, each when the input can be one.
type SearchPlan struct {
	// Input is the text searched, trimmed and re-fanged.
	Input string
	Kind  SearchKind
	// Check is the direct check; nil when the input names no resource of
	// its own (a bare package name: see Name).
	Check *CheckQuery
	// IndicatorType and IndicatorValue are the indicator the input is (an
	// IOC type and its normalised value, as ExtractIOCs gives it); empty
	// when it cannot be one.
	IndicatorType, IndicatorValue string
	// Name is a package name to look up in every package registry, exactly
	// and as a prefix; "" when the input cannot be a package name.
	Name string
}

// MaxSearchInput bounds a search box input, in bytes.
const MaxSearchInput = MaxIdentifierBytes

var (
	schemeRe = regexp.MustCompile(`(?i)^[a-z][a-z0-9+.-]*://`)
	// Wallet address formats, strict enough that a word is never one:
	// Bitcoin (bech32, base58), Ethereum and its kin, Monero, Litecoin,
	// Tron, Bitcoin Cash (cashaddr).
	walletFormats = []*regexp.Regexp{
		regexp.MustCompile(`^(?:bc1|tb1)[02-9ac-hj-np-z]{11,71}$`),
		regexp.MustCompile(`^[13][a-km-zA-HJ-NP-Z1-9]{25,34}$`),
		regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`),
		regexp.MustCompile(`^[48][0-9AB][1-9A-HJ-NP-Za-km-z]{93}(?:[1-9A-HJ-NP-Za-km-z]{11})?$`),
		regexp.MustCompile(`^(?:ltc1)[02-9ac-hj-np-z]{11,71}$|^[LM][a-km-zA-HJ-NP-Z1-9]{26,33}$`),
		regexp.MustCompile(`^T[1-9A-HJ-NP-Za-km-z]{33}$`),
		regexp.MustCompile(`^(?:bitcoincash:)?[qp][02-9ac-hj-np-z]{41}$`),
	}
	// containerHostRe is a registry host that starts an image reference:
	// a name with a dot or a port, or localhost.
	containerHostRe = regexp.MustCompile(`^(?:[a-z0-9-]+(?:\.[a-z0-9-]+)+(?::[0-9]+)?|localhost(?::[0-9]+)?)/`)
	// imageTagRe is a reference's :tag or @digest.
	imageTagRe = regexp.MustCompile(`(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|@sha256:[0-9a-f]{64})$`)
)

// codeHostPrefixes are hosts whose host/owner/name paths are repositories.
var codeHostPrefixes = []string{"github.com/", "gitlab.com/", "bitbucket.org/", "codeberg.org/"}

// ClassifySearch works out what a search box input is: a purl, a URL, an IP
// address, a wallet address, a container image, a repository, a domain, or
// else a package name. Defanged input (hxxps://evil[.]example) is re-fanged
// first. A domain-like input (socket.io, lodash.merge) is also looked up
// as a package name. The error is a *FieldError on "q" naming the problem.
func ClassifySearch(input string) (SearchPlan, error) {
	s := strings.TrimSpace(input)
	switch {
	case s == "":
		return SearchPlan{}, Invalid("q", "is empty: type a package name, a purl, a URL, a domain, an IP address, a wallet or an image")
	case len(s) > MaxSearchInput:
		return SearchPlan{}, Invalid("q", "is longer than %d bytes (%d)", MaxSearchInput, len(s))
	case !utf8.ValidString(s):
		return SearchPlan{}, Invalid("q", "is not valid UTF-8")
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return SearchPlan{}, Invalid("q", "contains a control character")
	}
	s = strings.TrimSpace(ioc.Refang(s))
	p := SearchPlan{Input: s}
	direct := func(t ReportType) error {
		c, err := CanonicalIdentifier(t, "", s)
		if err != nil {
			return err
		}
		q := CheckQuery{ReportType: t, ResourceIdentifier: s}
		p.Check = &q
		p.IndicatorType, p.IndicatorValue, _ = indicatorOf(t, c)
		return nil
	}
	fail := func(err error) (SearchPlan, error) {
		if fe, ok := err.(*FieldError); ok {
			return SearchPlan{}, Invalid("q", "%s", fe.Message)
		}
		return SearchPlan{}, err
	}
	lower := strings.ToLower(s)
	switch {
	case strings.HasPrefix(lower, "pkg:"):
		q, err := ParsePurl(s)
		if err != nil {
			return fail(err)
		}
		p.Kind, p.Check = SearchPurl, &q
		return p, nil
	case schemeRe.MatchString(s):
		if !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
			return fail(Invalid("q", "only http and https URLs are in the database (got %q)", s))
		}
		p.Kind = SearchURL
		if err := direct(TypeURL); err != nil {
			return fail(err)
		}
		return p, nil
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil && !strings.Contains(s, "%") {
		s = a.String()
		p.Input, p.Kind = s, SearchIP
		if err := direct(TypeIP); err != nil {
			return fail(err)
		}
		return p, nil
	}
	for _, re := range walletFormats {
		if re.MatchString(s) {
			p.Kind = SearchWallet
			if err := direct(TypeWallet); err == nil {
				return p, nil
			}
		}
	}
	for _, h := range codeHostPrefixes {
		if strings.HasPrefix(lower, h) && strings.Count(strings.Trim(s, "/"), "/") >= 2 {
			p.Kind = SearchRepository
			if err := direct(TypeRepository); err != nil {
				return fail(err)
			}
			p.Name = s // a Go module path too
			return p, nil
		}
	}
	if containerHostRe.MatchString(lower) || strings.Contains(s, "/") && imageTagRe.MatchString(s) || strings.HasSuffix(lower, ":latest") {
		p.Kind = SearchContainer
		if err := direct(TypeContainer); err != nil {
			return fail(err)
		}
		return p, nil
	}
	if !strings.ContainsAny(s, "/:@ ") && strings.Contains(s, ".") && ioc.IsHostText(lower) {
		if err := direct(TypeDomain); err == nil {
			p.Kind = SearchDomain
			// socket.io, lodash.merge: package names as well.
			p.Name = s
			return p, nil
		}
		p.Check, p.IndicatorType, p.IndicatorValue = nil, "", ""
	}
	if strings.ContainsAny(s, " \t") {
		return fail(Invalid("q", "%q is not a package name, purl, URL, domain, IP address, wallet or image (it has spaces)", s))
	}
	p.Kind, p.Name = SearchName, s
	return p, nil
}

// indicatorOf is the indicator a resource of type t with canonical
// identifier c is, as ExtractIOCs lists it; ok is false for packages and
// container images (found by name, not as indicators).
func indicatorOf(t ReportType, c string) (typ, value string, ok bool) {
	switch t {
	case TypeURL:
		return ioc.URL, c, true
	case TypeDomain:
		return ioc.Domain, c, true
	case TypeIP:
		return ioc.IP, c, true
	case TypeWallet:
		return ioc.Wallet, c, true
	case TypeRepository:
		return ioc.URL, "https://" + c, true
	}
	return "", "", false
}

// CheckIndicator is the indicator a check's resource is, for the indicator
// look-up (IndicatorKey); ok is false for packages and container images,
// and for an identifier that is not valid for its type.
func CheckIndicator(q CheckQuery) (typ, value string, ok bool) {
	c, err := CanonicalIdentifier(q.ReportType, "", q.ResourceIdentifier)
	if err != nil {
		return "", "", false
	}
	return indicatorOf(q.ReportType, c)
}
