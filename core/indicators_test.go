package core

import (
	"slices"
	"testing"

	"github.com/threatd/threatd/core/ioc"
)

func iocSet(iocs []ioc.IOC) []string {
	var out []string
	for _, i := range iocs {
		out = append(out, i.Type+":"+i.Value)
	}
	slices.Sort(out)
	return out
}

func TestExtractText(t *testing.T) {
	cases := []struct {
		name, text string
		want       []string
		not        []string
	}{
		{
			name: "npm stealer writeup",
			text: "The postinstall script reads ~/.npmrc and POSTs it to hxxps://exfil[.]evil-cdn[.]com/api/collect?id=1. " +
				"A second stage is fetched from hxxp://198[.]51[.]100[.]23:8080/stage2.sh and its SHA-256 is " +
				"9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08.",
			want: []string{"url:https://exfil.evil-cdn.com/api/collect?id=1", "domain:exfil.evil-cdn.com",
				"url:http://198.51.100.23:8080/stage2.sh", "ip:198.51.100.23",
				"hash:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
			not: []string{"domain:stage2.sh", "domain:.npmrc"},
		},
		{
			name: "pypi typosquat with md5, sha1 and a bare domain",
			text: "Beacons to c2[.]badactor[.]net every 60s (see setup.py and __init__.py). md5 d41d8cd98f00b204e9800998ecf8427e, " +
				"sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709. Contact: abuse@registrar.example",
			want: []string{"domain:c2.badactor.net", "hash:d41d8cd98f00b204e9800998ecf8427e", "hash:da39a3ee5e6b4b0d3255bfef95601890afd80709"},
			not:  []string{"domain:setup.py", "domain:__init__.py", "domain:registrar.example"},
		},
		{
			name: "wallets and IPv6",
			text: "Clipboard hijacker replaces addresses with 0xAbCdEf0123456789aBcDeF0123456789AbCdEf01 or " +
				"bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq; exfiltration over 2001:db8::dead:beef.",
			want: []string{"wallet:0xabcdef0123456789abcdef0123456789abcdef01", "wallet:bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", "ip:2001:db8::dead:beef"},
		},
		{
			name: "packages as purls, markdown and brackets",
			text: "Depends on `pkg:npm/evil-helper@1.0.3` which pulls [payload](hxxps://gist[.]example/raw/x). Timestamp 12:30:45.",
			want: []string{"package:pkg:npm/evil-helper@1.0.3", "url:https://gist.example/raw/x", "domain:gist.example"},
			not:  []string{"ip:12:30:45"},
		},
		{
			name: "(.) and [dot] variants, IDN",
			text: "Domains: login-secure(.)bank-example[dot]com and xn--bcher-kva[.]example",
			want: []string{"domain:login-secure.bank-example.com", "domain:xn--bcher-kva.example"},
		},
	}
	for _, c := range cases {
		got := iocSet(ExtractText(c.text))
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: missing %s in %v", c.name, w, got)
			}
		}
		for _, n := range c.not {
			if slices.Contains(got, n) {
				t.Errorf("%s: unexpected %s", c.name, n)
			}
		}
	}
}

func TestExtractIOCsIncludesTheResource(t *testing.T) {
	for _, c := range []struct {
		typ      ReportType
		registry string
		id, want string
	}{
		{TypePackage, "npm", "evil-pkg", "package:evil-pkg"},
		{TypeURL, "", "HTTPS://Evil.Example/x", "url:https://evil.example/x"},
		{TypeDomain, "", "Evil.Example.", "domain:evil.example"},
		{TypeIP, "", "::ffff:192.0.2.1", "ip:192.0.2.1"},
		{TypeWallet, "", "0xABCDEF0123456789abcdef0123456789ABCDEF01", "wallet:0xabcdef0123456789abcdef0123456789abcdef01"},
		{TypeRepository, "", "github.com/evil/repo.git", "url:https://github.com/evil/repo"},
		{TypeContainer, "", "evil/img:1", "package:docker.io/evil/img:1"},
	} {
		th := Threat{ReportType: c.typ, Registry: c.registry, ResourceIdentifier: c.id,
			Details: Details{PayloadDescription: "also hxxps://second[.]example/x"}}
		got := iocSet(ExtractIOCs(th))
		if !slices.Contains(got, c.want) || !slices.Contains(got, "url:https://second.example/x") {
			t.Errorf("%s %q: %v, want %s and the payload's URL", c.typ, c.id, got, c.want)
		}
		if n := len(got); n != len(slices.Compact(slices.Clone(got))) {
			t.Errorf("duplicates in %v", got)
		}
	}
}

// The digest on an OSV "## Source:" line is the upstream record's, not a
// file's: it is never a file-hash indicator; a digest the text states as
// the payload's still is.
func TestSourceDigestIsNotAnIndicator(t *testing.T) {
	text := "---\n_-= Per source details. Do not edit below this line.=-_\n\n" +
		"## Source: ghsa-malware (2e33f42f05c60c6d9f9297bae15a43d6c445e2ad0fd67fa4ef144e5cc79d09c7)\n" +
		"The crate downloads a payload with sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08.\n\n" +
		"## Source: ossf-package-analysis (A1B2C3D4E5F60718293A4B5C6D7E8F90A1B2C3D4E5F60718293A4B5C6D7E8F90)\n"
	var hashes []string
	for _, ind := range ExtractText(text) {
		if ind.Type == ioc.Hash {
			hashes = append(hashes, ind.Value)
		}
	}
	if len(hashes) != 1 || hashes[0] != "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" {
		t.Fatalf("hash indicators %v, want only the payload's", hashes)
	}
}

// Infrastructure hosts are never bare domain indicators when only a URL on
// them is given (the URL is the indicator); names without a public
// top-level domain are package or file names; a dotted package name is not
// its own domain; a bare mention of any domain is kept.
func TestDomainIndicatorRules(t *testing.T) {
	th := Threat{ReportType: TypePackage, ResourceIdentifier: "vtex.google", Registry: RegistryNPM, Details: Details{
		ThreatDescription: "Steals tokens",
		PayloadDescription: "Downloads hxxps://cdn[.]discordapp[.]com/attachments/1/2/payload.exe and https://github.com/evil/repo/raw/main/x.sh, " +
			"imports com.unity.xr and prettier.config, posts to pastebin.com and to c2.evil-domain.com, see vtex.google.",
	}}
	got := map[string]bool{}
	for _, ind := range ExtractIOCs(th) {
		got[ind.Type+" "+ind.Value] = true
	}
	for _, want := range []string{"url https://cdn.discordapp.com/attachments/1/2/payload.exe", "url https://github.com/evil/repo/raw/main/x.sh",
		"domain pastebin.com", "domain c2.evil-domain.com", "package vtex.google"} {
		if !got[want] {
			t.Errorf("missing %s in %v", want, got)
		}
	}
	for _, bad := range []string{"domain cdn.discordapp.com", "domain github.com", "domain com.unity.xr", "domain prettier.config", "domain vtex.google"} {
		if got[bad] {
			t.Errorf("false indicator %s", bad)
		}
	}
	// Services and resolvers named in passing are indicators of low
	// confidence: never searched, never block-listed.
	passing := Threat{ReportType: TypePackage, ResourceIdentifier: "ip-check", Registry: RegistryNPM, Details: Details{
		ThreatDescription:  "Exfiltrates the host's address",
		PayloadDescription: "Asks https://api.ipify.org/?format=json and www.google.com, resolves through 8.8.8.8 and 2606:4700:4700::1111, then posts to 203.0.113.77.",
	}}
	low := map[string]bool{}
	for _, ind := range ExtractIOCs(passing) {
		if !ioc.Searchable(ind) {
			low[ind.Type+" "+ind.Value] = true
		}
	}
	for _, want := range []string{"domain www.google.com", "ip 8.8.8.8", "ip 2606:4700:4700::1111"} {
		if !low[want] {
			t.Errorf("%s is not an indicator of low confidence: %v", want, low)
		}
	}
	if low["ip 203.0.113.77"] {
		t.Error("an address the report names as its target is of low confidence")
	}
	if !ioc.IsInfrastructure("gist.github.com") || !ioc.IsInfrastructure("dl.dropbox.com") || ioc.IsInfrastructure("github.com.evil.example") || ioc.IsInfrastructure("notgithub.com") {
		t.Fatal("IsInfrastructure: subdomains count, look-alikes do not")
	}
}

// Every indicator says where it comes from and how sure it is; the text's
// mentions of the package's own name, versions, registry and repository,
// and the report's own references, are not indicators. The texts are those
// of real OSV reports of the shared sample (MAL-2024-9968, MAL-2023-462,
// MAL-2022-1, MAL-2024-11542, MAL-2025-2545), cut short.
func TestIndicatorOriginsAndOwnNames(t *testing.T) {
	type want struct {
		origin     string
		confidence int
	}
	for _, c := range []struct {
		name string
		th   Threat
		want map[string]want // type value → origin, confidence
		not  []string
	}{
		{name: "osv section and payload", th: Threat{ReportType: TypePackage, Registry: RegistryPyPI, ResourceIdentifier: "discord-react",
			Source: "osv", Details: Details{VersionInfo: "0.0.0.1",
				PayloadDescription: "The OpenSSF Package Analysis project identified 'discord-react' @ 0.0.0.1 (pypi) as malicious.\n" +
					"It posts to hxxps://c2[.]evil-domain[.]com/x and names pastebin.com.\n\n" + ioc.Section + "\n\n- hxxps://grabber[.]evil-domain[.]com/y\n- 203[.]0[.]113[.]7\n"}},
			want: map[string]want{
				"package discord-react":                 {ioc.OriginAsset, ioc.ConfidenceHigh},
				"url https://grabber.evil-domain.com/y": {ioc.OriginOSV, ioc.ConfidenceHigh},
				"ip 203.0.113.7":                        {ioc.OriginOSV, ioc.ConfidenceHigh},
				"url https://c2.evil-domain.com/x":      {ioc.OriginPayload, ioc.ConfidenceMedium},
				"domain pastebin.com":                   {ioc.OriginPayload, ioc.ConfidenceLow},
				"domain grabber.evil-domain.com":        {ioc.OriginOSV, ioc.ConfidenceHigh},
			},
			not: []string{"ip 0.0.0.1"}},
		{name: "a community report's copy of the heading is its text", th: Threat{ReportType: TypeDomain, ResourceIdentifier: "evil.example",
			Details: Details{PayloadDescription: ioc.Section + "\n- 198.51.100.9\n"}},
			want: map[string]want{"domain evil.example": {ioc.OriginAsset, ioc.ConfidenceHigh}, "ip 198.51.100.9": {ioc.OriginPayload, ioc.ConfidenceMedium}}},
		{name: "references and the package's own pages", th: Threat{ReportType: TypePackage, Registry: RegistryNPM, ResourceIdentifier: "fsevents",
			Details: Details{EvidenceReferences: "https://github.com/fsevents/fsevents/commit/909af26846834642c81d19f4148afa3b7557b058",
				PayloadDescription: "[fsevents](https://www.npmjs.com/package/fsevents) v1.0.0 fetched fse.node from hxxps://fsevents-binaries[.]s3-us-west-2[.]amazonaws[.]com/v1.2.9/fse.tgz. " +
					"The pre-fetch was [removed](https://github.com/fsevents/fsevents/commit/909af26846834642c81d19f4148afa3b7557b058); source at https://github.com/fsevents/fsevents/tree/v1.x; " +
					"see https://github.com/advisories/GHSA-xv2f-5jw4-v95m and https://osv.dev/vulnerability/MAL-2023-462"}},
			want: map[string]want{"url https://fsevents-binaries.s3-us-west-2.amazonaws.com/v1.2.9/fse.tgz": {ioc.OriginPayload, ioc.ConfidenceMedium}},
			not: []string{"url https://www.npmjs.com/package/fsevents", "url https://github.com/fsevents/fsevents/tree/v1.x",
				"url https://github.com/fsevents/fsevents/commit/909af26846834642c81d19f4148afa3b7557b058", "hash 909af26846834642c81d19f4148afa3b7557b058",
				"url https://github.com/advisories/GHSA-xv2f-5jw4-v95m", "url https://osv.dev/vulnerability/MAL-2023-462", "domain www.npmjs.com"}},
		{name: "the package's own registry named bare", th: Threat{ReportType: TypePackage, Registry: RegistryCrates, ResourceIdentifier: "rustdecimal",
			Details: Details{PayloadDescription: "The Rust Security Response WG and the crates.io team were notified of the malicious crate `rustdecimal`; it downloads from api.evil.example."}},
			want: map[string]want{"domain api.evil.example": {ioc.OriginPayload, ioc.ConfidenceMedium}},
			not:  []string{"domain crates.io"}},
		{name: "names that contain hosts and hashes", th: Threat{ReportType: TypePackage, Registry: RegistryPyPI, ResourceIdentifier: "byte-flux-3822a6dd00d6414daba3ae0de3930a5a",
			Details: Details{PayloadDescription: "Malicious code in byte-flux-3822a6dd00d6414daba3ae0de3930a5a (PyPI); also Vtex.Google-tag-manager"}},
			not: []string{"hash 3822a6dd00d6414daba3ae0de3930a5a"}},
		{name: "a Go module's code host", th: Threat{ReportType: TypePackage, Registry: RegistryGo, ResourceIdentifier: "github.com/boltdb-go/bolt",
			Details: Details{PayloadDescription: "Malicious code in github.com/boltdb-go/bolt (Go), a typosquat of github.com/boltdb/bolt; it talks to 49.12.198.231"}},
			want: map[string]want{"ip 49.12.198.231": {ioc.OriginPayload, ioc.ConfidenceMedium}},
			not:  []string{"domain github.com"}},
	} {
		got := map[string]ioc.IOC{}
		for _, ind := range ExtractIOCs(c.th) {
			if ind.Origin == "" || ind.Confidence == 0 {
				t.Errorf("%s: %s %s has no origin or confidence", c.name, ind.Type, ind.Value)
			}
			got[ind.Type+" "+ind.Value] = ind
		}
		for k, w := range c.want {
			if g, ok := got[k]; !ok || g.Origin != w.origin || g.Confidence != w.confidence {
				t.Errorf("%s: %s = %+v, want origin %s confidence %d", c.name, k, g, w.origin, w.confidence)
			}
		}
		for _, k := range c.not {
			if _, ok := got[k]; ok {
				t.Errorf("%s: false indicator %s", c.name, k)
			}
		}
	}
}

// A package indicator lists the versions of version_info, once each; none
// when every version is affected.
func TestPackageIndicatorVersions(t *testing.T) {
	for _, c := range []struct {
		info string
		all  bool
		want []string
	}{
		{"1.0.0, 1.0.1,1.0.0", false, []string{"1.0.0", "1.0.1"}},
		{"", false, nil},
		{"2.0.0", true, nil},
	} {
		th := Threat{ReportType: TypePackage, Registry: RegistryNPM, ResourceIdentifier: "evil-pkg", AllVersions: c.all, Details: Details{VersionInfo: c.info}}
		iocs := ExtractIOCs(th)
		if len(iocs) == 0 || iocs[0].Type != ioc.Package || !slices.Equal(iocs[0].Versions, c.want) {
			t.Errorf("version_info %q (all %v): %+v, want versions %v", c.info, c.all, iocs, c.want)
		}
	}
}
