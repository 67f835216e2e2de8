package fakeregistry

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// ComposerPackage publishes a package in u's Composer 2 repository (under
// /composer, as repo.packagist.org serves it): packages.json naming
// metadata-url, the package's p2 document in the minified form (newest
// version first, each older one with only what differs), and a zip dist
// per version (a top folder holding composer.json and src/, as GitHub's
// zipballs are), at /composer-dist (a file host of its own, as GitHub's
// API is). versions are oldest first.
func (u *Registry) ComposerPackage(t testing.TB, name string, versions []string, at []time.Time) {
	t.Helper()
	u.Put("/composer/packages.json", "application/json", 300, []byte(`{"packages":[],"metadata-url":"/p2/%package%.json","notify-batch":"https://packagist.org/downloads/","search":"https://packagist.org/search.json?q=%query%&type=%type%","providers-api":"https://packagist.org/providers/%package%.json"}`))
	var list []map[string]any
	var last map[string]any
	for i := len(versions) - 1; i >= 0; i-- {
		v := versions[i]
		ref := fmt.Sprintf("%040x", i+1)
		u.Put("/composer-dist/"+name+"/"+ref+".zip", "application/zip", 31536000, ComposerZip(t, name, v))
		full := map[string]any{"name": name, "version": v, "version_normalized": strings.TrimPrefix(v, "v") + ".0",
			"time": at[i].UTC().Format("2006-01-02T15:04:05+00:00"), "type": "library", "license": []string{"MIT"},
			"source":   map[string]any{"type": "git", "url": "https://github.invalid/" + name + ".git", "reference": ref},
			"dist":     map[string]any{"type": "zip", "url": u.Srv.URL + "/composer-dist/" + name + "/" + ref + ".zip", "reference": ref, "shasum": ""},
			"require":  map[string]any{"php": ">=7.4"},
			"autoload": map[string]any{"psr-4": map[string]any{"Fake\\": "src/"}}}
		if last == nil {
			list = append(list, full)
		} else {
			diff := map[string]any{}
			for k, x := range full {
				a, _ := json.Marshal(x)
				b, _ := json.Marshal(last[k])
				if !bytes.Equal(a, b) {
					diff[k] = x
				}
			}
			list = append(list, diff)
		}
		last = full
	}
	doc, _ := json.Marshal(map[string]any{"packages": map[string]any{name: list}, "minified": "composer/2.0"})
	u.Put("/composer/p2/"+name+".json", "application/json", 300, doc)
	u.Put("/composer/p2/"+name+"~dev.json", "application/json", 300, []byte(`{"packages":{"`+name+`":[]},"minified":"composer/2.0"}`))
}

// ComposerZip is a dist: name-ref/composer.json and src/Lib.php.
func ComposerZip(t testing.TB, name, version string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	top := strings.ReplaceAll(name, "/", "-") + "-" + version + "/"
	for _, f := range []struct{ name, body string }{
		{"composer.json", fmt.Sprintf(`{"name":%q,"type":"library","license":"MIT","require":{"php":">=7.4"},"autoload":{"psr-4":{"Fake\\\\":"src/"}}}`, name)},
		{"src/Lib.php", fmt.Sprintf("<?php\nnamespace Fake;\nclass Lib { const VERSION = %q; }\n", version)},
	} {
		w, err := zw.Create(top + f.name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(f.body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
