package cargo

import (
	"errors"
	"strings"
	"testing"

	"github.com/threatd/threatd/core/firewall"
)

func TestParse(t *testing.T) {
	for path, want := range map[string]Request{
		"config.json":                      {Kind: Config},
		"1/a":                              {Kind: Index, Name: "a"},
		"2/ab":                             {Kind: Index, Name: "ab"},
		"3/a/abc":                          {Kind: Index, Name: "abc"},
		"se/rd/serde_json":                 {Kind: Index, Name: "serde_json"},
		"crates/Serde/1.0.0-rc.1/download": {Kind: Download, Name: "Serde", Version: "1.0.0-rc.1"},
	} {
		got, ok, err := Parse(path)
		if err != nil || !ok || got != want {
			t.Errorf("Parse(%q) = %+v %v %v, want %+v", path, got, ok, err, want)
		}
	}
	for _, path := range []string{"", "index.html", "se/rx/serde", "4/a/abcd", "crates/x/1/other"} {
		if _, ok, err := Parse(path); ok || err != nil {
			t.Errorf("Parse(%q): %v %v, want an unknown path", path, ok, err)
		}
	}
	for _, path := range []string{"se/rd/SERDE", "crates/a%2f..%2fb/1.0.0/download", "crates/ok/1%2f..%2f/download", "ab/cd/" + strings.Repeat("a", 65)} {
		var u *firewall.Unjudgeable
		if _, _, err := Parse(path); !errors.As(err, &u) {
			t.Errorf("Parse(%q): %v, want unjudgeable", path, err)
		}
	}
}

func TestRewrite(t *testing.T) {
	index := `{"name":"x","vers":"1.0.0","cksum":"aa","yanked":false,"pubtime":"2026-01-01T00:00:00Z"}
{"name":"x","vers":"1.0.1","cksum":"bb","yanked":false}
`
	judge := func(v string) (bool, string) { return v == "1.0.1", "bad" }
	r, err := Adapter{}.Rewrite(firewall.Document{Body: []byte(index), Name: "x"}, judge, "B")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(r.Body), "\n")
	if lines[0] != strings.Split(index, "\n")[0] || !strings.Contains(lines[1], `"yanked":true`) || !strings.Contains(lines[1], `"cksum":"bb"`) {
		t.Fatalf("rewrite:\n%s", r.Body)
	}
	vs, err := Adapter{}.Versions(firewall.Document{Body: []byte(index)})
	if err != nil || len(vs) != 2 || vs[0].Time.Year() != 2026 || !vs[1].Time.IsZero() {
		t.Fatalf("versions %+v %v", vs, err)
	}
	if _, err := (Adapter{}).Rewrite(firewall.Document{Body: []byte("{not json\n"), Name: "x"}, judge, "B"); err == nil {
		t.Fatal("a malformed index file is an error")
	}
	cfg, err := Adapter{}.Rewrite(firewall.Document{Body: []byte(`{"dl":"https://static.crates.io/crates","api":"https://crates.io"}`)}, judge, "B")
	if err != nil || string(cfg.Body) != `{"auth-required":true,"dl":"B/crates"}` {
		t.Fatalf("config.json: %s %v", cfg.Body, err)
	}
	for tmpl, want := range map[string]string{
		"https://dl.example/crates":                          "https://dl.example/crates/Serde/1.0.0/download",
		"https://dl.example/{lowerprefix}/{crate}-{version}": "https://dl.example/se/rd/Serde-1.0.0",
	} {
		if got, err := (Adapter{}).FileURL(firewall.Location{Template: tmpl}, "Serde", "1.0.0"); err != nil || got != want {
			t.Errorf("FileURL(%s) = %s %v", tmpl, got, err)
		}
	}
}
