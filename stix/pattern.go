package stix

import (
	"strings"

	"github.com/threatd/threatd/core/ioc"
)

// Quote renders s as a STIX pattern string literal: single quotes, with
// backslash and single quote escaped (STIX 2.1 §9.3), so that a value can
// never end the literal and change the pattern's meaning.
func Quote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s + "'"
}

// Pattern returns the STIX pattern that detects an IOC:
//
//	url      [url:value = '…']
//	domain   [domain-name:value = '…']
//	ip       [ipv4-addr:value = '…'] or [ipv6-addr:value = '…']
//	hash     [file:hashes.'MD5' | 'SHA-1' | 'SHA-256' = '…']
//	package  [software:name = '…' AND software:vendor = '<registry>']
//	         (container images: vendor 'container'; package URLs: vendor 'purl');
//	         with the affected versions when the report lists them:
//	         [… AND software:version IN ('1.0.0', '1.0.1')]
//	wallet   [cryptocurrency-wallet:value = '…'] (OpenCTI's observable type)
func Pattern(ind ioc.IOC) (string, bool) {
	v := Quote(ind.Value)
	switch ind.Type {
	case ioc.URL:
		return "[url:value = " + v + "]", true
	case ioc.Domain:
		return "[domain-name:value = " + v + "]", true
	case ioc.IP:
		if ind.Detail == "ipv6" || strings.Contains(ind.Value, ":") {
			return "[ipv6-addr:value = " + v + "]", true
		}
		return "[ipv4-addr:value = " + v + "]", true
	case ioc.Hash:
		algo := map[string]string{"md5": "MD5", "sha1": "SHA-1", "sha256": "SHA-256"}[ind.Detail]
		if algo == "" {
			algo = map[int]string{32: "MD5", 40: "SHA-1", 64: "SHA-256"}[len(ind.Value)]
		}
		if algo == "" {
			return "", false
		}
		return "[file:hashes." + Quote(algo) + " = " + v + "]", true
	case ioc.Package:
		vendor := ind.Detail
		if vendor == "" {
			vendor = "unknown"
		}
		p := "[software:name = " + v + " AND software:vendor = " + Quote(vendor)
		if len(ind.Versions) > 0 {
			quoted := make([]string, len(ind.Versions))
			for i, ver := range ind.Versions {
				quoted[i] = Quote(ver)
			}
			p += " AND software:version IN (" + strings.Join(quoted, ", ") + ")"
		}
		return p + "]", true
	case ioc.Wallet:
		return "[cryptocurrency-wallet:value = " + v + "]", true
	}
	return "", false
}
