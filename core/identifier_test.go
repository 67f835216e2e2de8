package core

import (
	"errors"
	"testing"
)

// TestCanonicalKeys: identifiers that are the same asset share a key
// (docs/api/submit.md, "Duplicates"), and different assets do not.
func TestCanonicalKeys(t *testing.T) {
	cases := []struct {
		typ      ReportType
		registry string
		same     []string
		key      string
		differ   []string
	}{
		{TypePackage, "npm", []string{"lodash", "LoDash", "LODASH"}, "package:npm:lodash", []string{"lodash-es", "lodash_"}},
		{TypePackage, "npm", []string{"@Scope/Pkg", "@scope/pkg"}, "package:npm:@scope/pkg", []string{"@scope/pkg2", "@other/pkg"}},
		{TypePackage, "npm", []string{"еxpress"}, "package:npm:еxpress", []string{"express"}}, // Cyrillic е: never transliterated
		{TypePackage, "pypi", []string{"Requests_Toolbelt", "requests.toolbelt", "requests--toolbelt", "REQUESTS-TOOLBELT", "requests_.toolbelt"}, "package:pypi:requests-toolbelt", []string{"requeststoolbelt"}},
		{TypePackage, "nuget", []string{"Newtonsoft.Json", "newtonsoft.json"}, "package:nuget:newtonsoft.json", []string{"Newtonsoft-Json"}},
		{TypePackage, "crates.io", []string{"serde_json", "Serde-Json", "serde-json"}, "package:crates.io:serde-json", []string{"serdejson"}},
		{TypePackage, "maven", []string{"org.apache.logging.log4j:log4j-core"}, "package:maven:org.apache.logging.log4j:log4j-core", []string{"org.apache.logging.log4j:Log4j-Core"}},
		{TypePackage, "go", []string{"github.com/evil/mod"}, "package:go:github.com/evil/mod", []string{"github.com/Evil/mod"}},
		{TypePackage, "rubygems", []string{"Rails-Evil"}, "package:rubygems:Rails-Evil", []string{"rails-evil"}},
		{TypePackage, "packagist", []string{"vendor/pkg"}, "package:packagist:vendor/pkg", []string{"Vendor/pkg"}},
		{TypePackage, "vscode", []string{"pub.ext"}, "package:vscode:pub.ext", []string{"Pub.ext"}},
		{TypePackage, "openvsx", []string{"pub.ext"}, "package:openvsx:pub.ext", nil},
		{TypeDomain, "", []string{"Evil.Example.COM", "evil.example.com.", "evil.example.com"}, "domain:evil.example.com", []string{"example.com", "evil2.example.com"}},
		{TypeDomain, "", []string{"bücher.example", "BÜCHER.example", "xn--bcher-kva.example"}, "domain:xn--bcher-kva.example", nil},
		{TypeURL, "", []string{"HTTPS://Evil.Example.com:443/Path?q=1#frag", "https://evil.example.com/Path?q=1"}, "url:https://evil.example.com/Path?q=1", []string{"https://evil.example.com/path?q=1", "http://evil.example.com/Path?q=1", "https://evil.example.com:8443/Path?q=1"}},
		{TypeURL, "", []string{"http://evil.example.com", "http://evil.example.com:80/", "HTTP://EVIL.example.com/#x"}, "url:http://evil.example.com/", nil},
		{TypeURL, "", []string{"http://[2001:DB8::1]:8080/x"}, "url:http://[2001:db8::1]:8080/x", nil},
		{TypeIP, "", []string{"192.0.2.1", "::ffff:192.0.2.1"}, "ip:192.0.2.1", []string{"192.0.2.10"}},
		{TypeIP, "", []string{"2001:DB8:0:0:0:0:0:1", "2001:db8::1"}, "ip:2001:db8::1", nil},
		{TypeRepository, "", []string{"GitHub.com/Evil/Repo", "github.com/Evil/Repo/", "github.com/Evil/Repo.git", "github.com/Evil/Repo.git/"}, "repository:github.com/Evil/Repo", []string{"github.com/evil/repo", "gitlab.com/Evil/Repo"}},
		{TypeWallet, "", []string{"0xAbCdEf0123456789aBcDeF0123456789AbCdEf01", "0xabcdef0123456789abcdef0123456789abcdef01"}, "wallet:0xabcdef0123456789abcdef0123456789abcdef01", nil},
		{TypeWallet, "", []string{"bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"}, "wallet:bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", []string{"BC1QAR0SRRR7XFKVY5L643LYDNW9RE59GTZZWF5MDQ"}},
		{TypeContainer, "", []string{"nginx", "docker.io/library/nginx", "docker.io/library/nginx:latest", "index.docker.io/library/nginx:latest", "library/nginx"}, "container:docker.io/library/nginx:latest", []string{"nginx:1.25", "ghcr.io/library/nginx"}},
		{TypeContainer, "", []string{"GHCR.io/evil/img:v1"}, "container:ghcr.io/evil/img:v1", []string{"ghcr.io/evil/img:v2"}},
		{TypeContainer, "", []string{"quay.io/evil/img@sha256:" + "aa00000000000000000000000000000000000000000000000000000000000000"}, "container:quay.io/evil/img@sha256:aa00000000000000000000000000000000000000000000000000000000000000", nil},
		{TypeContainer, "", []string{"localhost:5000/x/y"}, "container:localhost:5000/x/y:latest", nil},
	}
	for _, c := range cases {
		for _, id := range c.same {
			k, err := CanonicalKey(c.typ, c.registry, id)
			if err != nil || k != c.key {
				t.Errorf("%s/%s %q: key %q, %v; want %q", c.typ, c.registry, id, k, err, c.key)
			}
		}
		for _, id := range c.differ {
			k, err := CanonicalKey(c.typ, c.registry, id)
			if err == nil && k == c.key {
				t.Errorf("%s/%s %q: same key as %q", c.typ, c.registry, id, c.same[0])
			}
		}
	}
}

func TestInvalidIdentifiers(t *testing.T) {
	cases := []struct {
		typ      ReportType
		registry string
		id       string
	}{
		{TypePackage, "npm", "has space"},
		{TypePackage, "npm", "@scope"},
		{TypePackage, "npm", "a/b"},
		{TypePackage, "npm", ".hidden"},
		{TypePackage, "pypi", "-leading"},
		{TypePackage, "pypi", "semi;colon"},
		{TypePackage, "maven", "no-colon"},
		{TypePackage, "maven", "g:a:1.0"},
		{TypePackage, "go", "nodomain/x"},
		{TypePackage, "go", "github.com//x"},
		{TypePackage, "packagist", "novendor"},
		{TypePackage, "vscode", "nodot"},
		{TypePackage, "crates.io", "bad.name"},
		{TypeURL, "", "ftp://example.com/x"},
		{TypeURL, "", "example.com/x"},
		{TypeURL, "", "https://"},
		{TypeURL, "", "https://exa mple.com/"},
		{TypeURL, "", "javascript:alert(1)"},
		{TypeDomain, "", "https://example.com"},
		{TypeDomain, "", "example.com/path"},
		{TypeDomain, "", "example.com:8080"},
		{TypeDomain, "", "localhost"},
		{TypeDomain, "", "192.0.2.1"},
		{TypeDomain, "", "-bad-.com"},
		{TypeDomain, "", "a..com"},
		{TypeIP, "", "999.1.1.1"},
		{TypeIP, "", "fe80::1%eth0"},
		{TypeIP, "", "example.com"},
		{TypeRepository, "", "https://github.com/a/b"},
		{TypeRepository, "", "github.com"},
		{TypeRepository, "", "github.com/../x"},
		{TypeRepository, "", "0.0/ /"},
		{TypeRepository, "", "github.com/a b"},
		{TypeDomain, "", "10.0.0.300"},
		{TypeDomain, "", "1.2"},
		{TypeWallet, "", "short"},
		{TypeWallet, "", "0x-not-alnum-0000000000000000000000000000"},
		{TypeContainer, "", "UPPER/case"},
		{TypeContainer, "", "nginx:bad tag"},
		{TypeContainer, "", "nginx@sha256:xyz"},
		{TypeContainer, "", "https://docker.io/nginx"},
		{TypePackage, "npm", "   "},
		{TypePackage, "npm", "ctrl\x01char"},
	}
	for _, c := range cases {
		_, err := CanonicalKey(c.typ, c.registry, c.id)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "resource_identifier" {
			t.Errorf("%s/%s %q: got %v, want a resource_identifier error", c.typ, c.registry, c.id, err)
		}
	}
}
