package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"

	"github.com/threatd/threatd/config"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/cache"
	"github.com/threatd/threatd/core/firewall/npm"
	"github.com/threatd/threatd/core/firewall/registries"
)

// fetched is a version's archive, and its previous version's, downloaded
// from the registry's upstream for threatd analyze PURL.
type fetched struct {
	ecosystem, name, version string
	path                     string
	previous                 string // "" when the registry lists no lower version
	previousVersion          string
}

// fetchPurl downloads the archive a purl names, and the previous version's
// (the highest lower version the registry lists, in semver order), from
// the upstreams the firewall is configured with (firewall.<registry>.
// upstream), into dir. npm and Go modules are fetched; other registries
// are refused with what to do instead.
func fetchPurl(ctx context.Context, cfg config.Config, purl, dir string) (fetched, error) {
	q, err := core.ParsePurl(purl)
	if err != nil {
		return fetched{}, err
	}
	if q.Version == "" {
		return fetched{}, fmt.Errorf("%s names no version: analyze one version (%s@1.2.3)", purl, strings.TrimSuffix(purl, "@"))
	}
	f := fetched{ecosystem: q.Ecosystem, name: q.ResourceIdentifier, version: q.Version}
	if q.Ecosystem != core.RegistryNPM && q.Ecosystem != core.RegistryGo {
		return f, fmt.Errorf("threatd analyze fetches npm and Go packages by purl; for %s, download the archive and name its path", q.Ecosystem)
	}
	// The firewall's own client and origins: the registry's upstream and
	// file hosts, nothing a document names elsewhere (a tarball URL on
	// another host is refused), and no private address unless
	// firewall.allow_private says so.
	reg := cfg.Firewall.Registries[q.Ecosystem]
	up := strings.TrimSuffix(reg.Upstream, "/")
	// A private name (firewall.private) comes from the private upstream
	// alone, as the firewall fetches it, never from the public registry.
	policy, err := firewall.NewPolicy(nil, cfg.Firewall.Private, registries.Names())
	if err != nil {
		return f, err
	}
	if policy.Private(q.Ecosystem, f.name) {
		if reg.PrivateUpstream == "" {
			return f, fmt.Errorf("%s %s is a private name (firewall.private) and firewall.%s.private_upstream is not set: it is never fetched from the public registry", q.Ecosystem, f.name, q.Ecosystem)
		}
		up = strings.TrimSuffix(reg.PrivateUpstream, "/")
	}
	origins := []cache.Origin{{URL: up}}
	allowed := cache.Origins{}
	for _, h := range append([]string{up}, reg.FileHosts...) {
		origins = append(origins, cache.Origin{URL: h})
		if u, err := url.Parse(h); err == nil {
			allowed[cache.OriginOf(u)] = true
		}
	}
	client, err := cache.NewClient(origins, cfg.Firewall.AllowPrivate)
	if err != nil {
		return f, fmt.Errorf("firewall.%s.upstream: %w", q.Ecosystem, err)
	}
	client.Timeout = cfg.Analysis.Timeout
	ctx = cache.WithOrigins(ctx, allowed)
	limit := int64(cfg.Analysis.MaxArchiveBytes)
	switch q.Ecosystem {
	case core.RegistryNPM:
		var doc struct {
			Versions map[string]struct {
				Dist struct {
					Tarball string `json:"tarball"`
				} `json:"dist"`
			} `json:"versions"`
		}
		if err := getJSON(ctx, client, up+"/"+npm.Escape(f.name), &doc); err != nil {
			return f, err
		}
		v, ok := doc.Versions[f.version]
		if !ok || v.Dist.Tarball == "" {
			return f, fmt.Errorf("npm %s has no version %s", f.name, f.version)
		}
		if !allowed.Allows(v.Dist.Tarball) {
			return f, fmt.Errorf("npm %s %s: the registry names its tarball at %s, not on the upstream or a firewall.npm.file_hosts origin", f.name, f.version, v.Dist.Tarball)
		}
		var listed []string
		for ver := range doc.Versions {
			listed = append(listed, ver)
		}
		f.previousVersion = previousSemver(listed, f.version, "v")
		if f.path, err = download(ctx, client, v.Dist.Tarball, filepath.Join(dir, "this.tgz"), limit); err != nil {
			return f, err
		}
		if f.previousVersion != "" {
			f.previous, err = download(ctx, client, doc.Versions[f.previousVersion].Dist.Tarball, filepath.Join(dir, "previous.tgz"), limit)
		}
		return f, err
	default: // core.RegistryGo
		esc, err := module.EscapePath(f.name)
		if err != nil {
			return f, fmt.Errorf("%s: %w", purl, err)
		}
		list, err := get(ctx, client, up+"/"+esc+"/@v/list", 1<<20)
		if err != nil {
			return f, err
		}
		f.previousVersion = previousSemver(strings.Fields(string(list)), f.version, "")
		zip := func(version, to string) (string, error) {
			ev, err := module.EscapeVersion(version)
			if err != nil {
				return "", err
			}
			return download(ctx, client, up+"/"+esc+"/@v/"+ev+".zip", to, limit)
		}
		if f.path, err = zip(f.version, filepath.Join(dir, "this.zip")); err != nil {
			return f, err
		}
		if f.previousVersion != "" {
			f.previous, err = zip(f.previousVersion, filepath.Join(dir, "previous.zip"))
		}
		return f, err
	}
}

// previousSemver is the highest of listed below v in semver order (prefix
// "v" for npm's versions, which carry none); "" when none is.
func previousSemver(listed []string, v, prefix string) string {
	best := ""
	for _, l := range listed {
		if !semver.IsValid(prefix+l) || semver.Compare(prefix+l, prefix+v) >= 0 {
			continue
		}
		if best == "" || semver.Compare(prefix+l, prefix+best) > 0 {
			best = l
		}
	}
	return best
}

// get reads a document of at most limit bytes; an answer other than 200
// is an error naming it.
func get(ctx context.Context, client *http.Client, u string, limit int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return nil, err
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, res.Status)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, limit+1))
	if err == nil && int64(len(b)) > limit {
		err = fmt.Errorf("GET %s: more than %d bytes", u, limit)
	}
	return b, err
}

func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
	b, err := get(ctx, client, u, 64<<20)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: not the JSON document expected: %w", u, err)
	}
	return nil
}

// download writes what u serves to path, refusing more than limit bytes
// (analysis.max_archive_bytes).
func download(ctx context.Context, client *http.Client, u, path string, limit int64) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return "", err
	}
	res, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", u, res.Status)
	}
	out, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	n, err := io.Copy(out, io.LimitReader(res.Body, limit+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > limit {
		err = errors.New("the archive is over analysis.max_archive_bytes")
	}
	return path, err
}
