package stix

import (
	"strings"

	"github.com/threatd/threatd/core"
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
func Pattern(ioc core.IOC) (string, bool) {
	v := Quote(ioc.Value)
	switch ioc.Type {
	case core.IOCURL:
		return "[url:value = " + v + "]", true
	case core.IOCDomain:
		return "[domain-name:value = " + v + "]", true
	case core.IOCIP:
		if ioc.Detail == "ipv6" || strings.Contains(ioc.Value, ":") {
			return "[ipv6-addr:value = " + v + "]", true
		}
		return "[ipv4-addr:value = " + v + "]", true
	case core.IOCHash:
		algo := map[string]string{"md5": "MD5", "sha1": "SHA-1", "sha256": "SHA-256"}[ioc.Detail]
		if algo == "" {
			algo = map[int]string{32: "MD5", 40: "SHA-1", 64: "SHA-256"}[len(ioc.Value)]
		}
		if algo == "" {
			return "", false
		}
		return "[file:hashes." + Quote(algo) + " = " + v + "]", true
	case core.IOCPackage:
		vendor := ioc.Detail
		if vendor == "" {
			vendor = "unknown"
		}
		p := "[software:name = " + v + " AND software:vendor = " + Quote(vendor)
		if len(ioc.Versions) > 0 {
			quoted := make([]string, len(ioc.Versions))
			for i, ver := range ioc.Versions {
				quoted[i] = Quote(ver)
			}
			p += " AND software:version IN (" + strings.Join(quoted, ", ") + ")"
		}
		return p + "]", true
	case core.IOCWallet:
		return "[cryptocurrency-wallet:value = " + v + "]", true
	}
	return "", false
}
