package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
	"github.com/threatd/threatd/core/firewall/oci"
)

// manifestAccept is what a manifest is asked for with when the client
// says nothing: every manifest type a client may pull.
const manifestAccept = "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json"

// fetchManifest reads a manifest of req's repository whole, with its
// digest.
func (o *ociProxy) fetchManifest(ctx context.Context, req oci.Request, ref string, accept []string) (body []byte, digest, contentType string, res *http.Response, err error) {
	if len(accept) == 0 {
		accept = []string{manifestAccept}
	}
	res, err = o.do(ctx, http.MethodGet, req.Upstream+"/manifests/"+ref, req.Upstream, http.Header{"Accept": accept})
	if err != nil {
		return nil, "", "", nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, "", "", res, nil
	}
	defer res.Body.Close()
	body, err = io.ReadAll(io.LimitReader(res.Body, maxManifest+1))
	if err != nil {
		return nil, "", "", nil, o.p.unreachable(firewall.FirewallOCI, err)
	}
	if len(body) > maxManifest {
		return nil, "", "", nil, &Error{Status: http.StatusBadGateway, Message: fmt.Sprintf("The OCI upstream's manifest of %s:%s is larger than the firewall reads (%d MiB)", req.Name, ref, maxManifest>>20)}
	}
	sum := sha256.Sum256(body)
	digest = "sha256:" + hex.EncodeToString(sum[:])
	return body, digest, res.Header.Get("Content-Type"), nil, nil
}

// resolve is what a tag or a digest resolves to now: the manifest's
// digest and, for an image index, its platforms' manifests (kept a minute).
func (o *ociProxy) resolve(ctx context.Context, req oci.Request, ref string) ([]string, error) {
	key := req.Upstream + "\x00" + ref
	o.mu.Lock()
	r, ok := o.resolved[key]
	o.mu.Unlock()
	if ok && time.Now().Before(r.until) {
		return r.digests, nil
	}
	body, digest, _, res, err := o.fetchManifest(ctx, req, ref, nil)
	if err != nil {
		return nil, err
	}
	if res != nil {
		res.Body.Close()
		return nil, nil // the upstream has no such tag now
	}
	digests := append([]string{digest}, oci.Children(body)...)
	o.mu.Lock()
	if len(o.resolved) >= maxOCIResolved {
		clear(o.resolved)
	}
	o.resolved[key] = ociResolved{digests: digests, until: time.Now().Add(resolvedFor)}
	o.mu.Unlock()
	return digests, nil
}

// blocking are the reports that block a manifest request: of the whole
// repository; by its tag; by the digest asked for or served; by the
// digest a reported tag or a reported index resolves to now, or resolved
// to before (pinned: a digest once a reported tag's stays refused while
// the report stands, wherever the tag moves).
func (o *ociProxy) blocking(ctx context.Context, req oci.Request, served string, rep oci.Reported) ([]core.Threat, error) {
	ref := req.Reference
	if len(rep.Every) > 0 {
		return rep.Every, nil
	}
	if ts := rep.Tags[ref]; len(ts) > 0 {
		// Refused by its tag: what the tag resolves to now is pinned too.
		if _, err := o.resolveAndPin(ctx, req, ref, ts); err != nil {
			o.p.log.Warn("firewall: pinning what a reported tag resolves to failed", "image", req.Name+":"+ref, "error", err.Error())
		}
		return ts, nil
	}
	for _, d := range []string{ref, served} {
		if ts := rep.Digests[d]; len(ts) > 0 {
			return ts, nil
		}
	}
	if !strings.Contains(ref, ":") && served == "" {
		return nil, nil
	}
	asked := func(ds []string) bool { return slices.Contains(ds, ref) || served != "" && slices.Contains(ds, served) }
	if ts, err := o.pinnedBlocking(ctx, rep, asked); err != nil || len(ts) > 0 {
		return ts, err
	}
	for tag, ts := range rep.Tags {
		ds, err := o.resolveAndPin(ctx, req, tag, ts)
		if err != nil {
			return nil, err
		}
		if asked(ds) {
			return ts, nil
		}
	}
	for d, ts := range rep.Digests {
		ds, err := o.resolve(ctx, req, d)
		if err != nil {
			return nil, err
		}
		if asked(ds) {
			return ts, nil
		}
	}
	return nil, nil
}

// resolveAndPin resolves a reported tag and pins what it resolves to
// under its reports.
func (o *ociProxy) resolveAndPin(ctx context.Context, req oci.Request, tag string, ts []core.Threat) ([]string, error) {
	ds, err := o.resolve(ctx, req, tag)
	if err != nil || len(ds) == 0 {
		return ds, err
	}
	o.mu.Lock()
	var pins []firewall.DigestPin
	now := time.Now().UTC()
	for _, t := range ts {
		had := o.pins[t.ID]
		for _, d := range ds {
			if !slices.Contains(had.digests, d) && len(pins) < core.MaxGetThreats {
				pins = append(pins, firewall.DigestPin{ThreatID: t.ID, Digest: d, PinnedAt: now})
				had.digests = append(had.digests, d)
			}
		}
		o.pins[t.ID] = had
	}
	o.mu.Unlock()
	if len(pins) > 0 {
		if err := o.p.host.Pins.PinDigests(ctx, pins); err != nil {
			return ds, err
		}
	}
	return ds, nil
}

// ociPinned are the digests pinned under a report, as this daemon last
// read them from storage (until: when to read them again, for other
// daemons' pins).
type ociPinned struct {
	digests []string
	until   time.Time
}

// pinsFor is how long pins read from storage are kept before they are
// read again (another daemon's pins are found within it).
const pinsFor = 5 * time.Second

// pinnedBlocking are the reports of tags one of whose pinned digests is
// asked.
func (o *ociProxy) pinnedBlocking(ctx context.Context, rep oci.Reported, asked func([]string) bool) ([]core.Threat, error) {
	var ids []string
	now := time.Now()
	o.mu.Lock()
	for _, ts := range rep.Tags {
		for _, t := range ts {
			if p, ok := o.pins[t.ID]; !ok || !now.Before(p.until) {
				ids = append(ids, t.ID)
			}
		}
	}
	o.mu.Unlock()
	if len(ids) > 0 {
		pins, err := o.p.host.Pins.PinnedDigests(ctx, ids[:min(len(ids), core.MaxGetThreats)])
		if err != nil {
			return nil, err
		}
		read := map[string][]string{}
		for _, p := range pins {
			read[p.ThreatID] = append(read[p.ThreatID], p.Digest)
		}
		o.mu.Lock()
		if len(o.pins) >= maxOCIResolved {
			clear(o.pins)
		}
		for _, id := range ids {
			p := o.pins[id]
			for _, d := range read[id] {
				if !slices.Contains(p.digests, d) {
					p.digests = append(p.digests, d)
				}
			}
			p.until = now.Add(pinsFor)
			o.pins[id] = p
		}
		o.mu.Unlock()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ts := range rep.Tags {
		for _, t := range ts {
			if asked(o.pins[t.ID].digests) {
				return ts, nil
			}
		}
	}
	return nil, nil
}
