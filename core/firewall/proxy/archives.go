package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/threatd/threatd/core/analysis"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/cache"
	"github.com/threatd/threatd/core/versioning"
)

// FetchArchives downloads a version's archive, and its previous version's
// (the highest lower version its registry lists), into dir for package
// analysis (analysis.Fetcher): through the firewall's cache, its upstreams
// and origins, as the firewall fetches them (a private name from the
// private upstream alone), at most limit bytes each.
func (p *Proxy) FetchArchives(ctx context.Context, k analysis.Key, dir string, limit int64) (analysis.Target, *analysis.Target, error) {
	cur, prev, err := p.fetchArchives(ctx, k, dir, limit)
	var e *Error
	if errors.As(err, &e) && e.Cause != nil {
		err = fmt.Errorf("%s (%v)", e.Message, e.Cause)
	}
	return cur, prev, err
}

func (p *Proxy) fetchArchives(ctx context.Context, k analysis.Key, dir string, limit int64) (analysis.Target, *analysis.Target, error) {
	reg := k.Ecosystem
	if reg == "crates.io" {
		reg = firewall.FirewallCargo
	}
	a, ok := p.adapters[reg]
	ar, ok2 := a.(firewall.Archives)
	if !ok || !ok2 {
		return analysis.Target{}, nil, fmt.Errorf("the firewall does not fetch %s archives (firewall.%s is off, or its archives are not analysed)", k.Ecosystem, reg)
	}
	v := firewall.Verdict{Registry: reg, Name: k.Name, Private: p.opts.Policy.Private(reg, k.Name)}
	up, err := p.upstream(reg, v)
	if err != nil {
		return analysis.Target{}, nil, err
	}
	path, accept := ar.ArchiveIndex(k.Name)
	docURL, err := p.at(ctx, a, up, path)
	if err != nil {
		return analysis.Target{}, nil, err
	}
	if pf, ok := a.(firewall.PostedFacts); ok {
		docURL = cache.PostRequest(docURL, pf.FactsBody(k.Name))
	}
	body, res, err := p.fetchDocument(ctx, reg, docURL, accept)
	if err != nil {
		return analysis.Target{}, nil, err
	}
	if res != nil {
		res.Body.Close()
		return analysis.Target{}, nil, fmt.Errorf("the %s upstream answered %d for %s", reg, res.Status, docURL)
	}
	urls, err := ar.ArchiveURLs(firewall.Document{Body: body, ContentType: accept, URL: docURL, Name: k.Name})
	if err != nil {
		return analysis.Target{}, nil, p.unreadable(reg, err)
	}
	curURL, ok := urls[k.Version]
	if !ok {
		return analysis.Target{}, nil, fmt.Errorf("%s %s lists no archive of version %s", k.Ecosystem, k.Name, k.Version)
	}
	versions := make([]string, 0, len(urls))
	for ver := range urls {
		versions = append(versions, ver)
	}
	get := func(version, rawURL, name string) (analysis.Target, error) {
		t := analysis.Target{Ecosystem: k.Ecosystem, Name: k.Name, Version: version, Path: filepath.Join(dir, name)}
		if rawURL == "" {
			// Where the upstream's own index says (crates.io's dl).
			if rawURL, err = p.locate(ctx, a, up, k.Name, version); err != nil {
				return t, err
			}
		} else if !strings.Contains(rawURL, "://") {
			if rawURL, err = p.at(ctx, a, up, rawURL); err != nil {
				return t, err
			}
		}
		t.Digest, err = p.download(ctx, reg, rawURL, t.Path, limit)
		return t, err
	}
	cur, err := get(k.Version, curURL, "this"+archiveExt(curURL))
	if err != nil {
		return cur, nil, err
	}
	prevVersion := versioning.Previous(k.Ecosystem, versions, k.Version)
	if prevVersion == "" {
		return cur, nil, nil
	}
	prevURL := urls[prevVersion]
	prev, err := get(prevVersion, prevURL, "previous"+archiveExt(prevURL))
	if err != nil {
		return cur, nil, fmt.Errorf("the previous version, %s: %w", prevVersion, err)
	}
	return cur, &prev, nil
}

// locate is the URL of a version's file that a FileLocator adapter's
// registry-wide document gives.
func (p *Proxy) locate(ctx context.Context, a firewall.Adapter, up, name, version string) (string, error) {
	fl, ok := a.(firewall.FileLocator)
	if !ok {
		return "", fmt.Errorf("the %s adapter names no archive of %s %s", a.Registry(), name, version)
	}
	rt, _, err := a.Route(firewall.Request{Path: "config.json"})
	if err != nil {
		return "", err
	}
	indexURL, err := p.at(ctx, a, up, rt.Upstream)
	if err != nil {
		return "", err
	}
	loc, res, err := parsedDocument(ctx, p, a.Registry(), indexURL, rt.Accept, "locate", func(doc firewall.Document) (firewall.Location, error) {
		return fl.Locate(doc)
	}, func(loc firewall.Location) int64 { return int64(len(loc.Template)) + 64 })
	if err != nil {
		return "", err
	}
	if res != nil {
		res.Body.Close()
		return "", fmt.Errorf("the %s upstream answered %d for %s", a.Registry(), res.Status, indexURL)
	}
	return fl.FileURL(loc, name, version)
}

// archiveExt keeps an archive's kind in the file's name (a wheel and an
// sdist are read differently).
func archiveExt(rawURL string) string {
	base := rawURL
	if i := strings.IndexAny(base, "?#"); i >= 0 {
		base = base[:i]
	}
	base = strings.ToLower(filepath.Base(base))
	switch base {
	case "download":
		return ".crate" // crates.io's {crate}/{version}/download
	case "vspackage":
		return ".vsix" // the Marketplace's …/{version}/vspackage
	}
	for _, ext := range []string{".tar.gz", ".tar.bz2", ".tgz", ".whl", ".zip", ".gem", ".crate", ".vsix"} {
		if strings.HasSuffix(base, ext) {
			return ext
		}
	}
	return ""
}

// download writes what rawURL serves to path through the cache, refusing
// more than limit bytes, and returns its sha256.
func (p *Proxy) download(ctx context.Context, reg, rawURL, path string, limit int64) (string, error) {
	res, err := p.fetch(ctx, reg, rawURL, "")
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if res.Status != http.StatusOK {
		return "", fmt.Errorf("the %s upstream answered %d for %s", reg, res.Status, rawURL)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(res.Body, limit+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > limit {
		err = errors.New("the archive is over analysis.max_archive_bytes")
	}
	return hex.EncodeToString(h.Sum(nil)), err
}
