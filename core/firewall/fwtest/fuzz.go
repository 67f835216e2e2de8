// Package fwtest is test support for the registry adapters: the fuzz
// property every rewrite of a version list holds.
package fwtest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/threatd/threatd/core/firewall"
)

// Refused is the judge of the fuzz targets: 1.0.1, 2.0.0 and any version
// naming "evil" are refused.
func Refused(version string) (bool, string) {
	v := strings.ToLower(version)
	if v == "1.0.1" || v == "2.0.0" || strings.Contains(v, "evil") {
		return true, "reported"
	}
	return false, ""
}

// Served lists the versions a rewritten document still offers a client
// (nil: the adapter's Versions of it, which lists what it offers).
type Served func(a firewall.Adapter, doc firewall.Document) ([]string, error)

// Rewrite is the property of a version list's rewrite, for any bytes the
// upstream sends as doc: the rewrite never panics; what it serves offers
// no refused version; and rewriting what it served changes nothing (a
// client that reads it twice, or a cache in front, sees one document).
func Rewrite(t *testing.T, a firewall.Adapter, doc firewall.Document, served Served) {
	t.Helper()
	r, err := a.Rewrite(doc, Refused, "https://fw.invalid/"+a.Registry())
	if err != nil {
		return
	}
	out := doc
	out.Body = r.Body
	if served == nil {
		served = func(a firewall.Adapter, doc firewall.Document) ([]string, error) {
			ps, err := a.Versions(doc)
			vs := make([]string, len(ps))
			for i, p := range ps {
				vs[i] = p.Version
			}
			return vs, err
		}
	}
	if vs, err := served(a, out); err == nil {
		for _, v := range vs {
			if refused, _ := Refused(v); refused {
				t.Fatalf("the rewrite still offers refused %q:\n%s\n(from %q)", v, r.Body, doc.Body)
			}
		}
	}
	again, err := a.Rewrite(out, Refused, "https://fw.invalid/"+a.Registry())
	if err != nil {
		t.Fatalf("the rewrite of the rewrite failed: %v\n%s\n(from %q)", err, r.Body, doc.Body)
	}
	if !bytes.Equal(again.Body, r.Body) {
		t.Fatalf("rewriting the rewrite changed it:\n%s\n%s\n(from %q)", r.Body, again.Body, doc.Body)
	}
}
