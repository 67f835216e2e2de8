// Package osv is the OSV source: it reads OSV-format malicious-package
// reports (files, folders, and the all.zip archives OSV publishes per
// ecosystem) and maps each record to threatd reports verified by the system
// reviewer osv-import. See docs/ingestion.md for the field mapping.
package osv

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/ossf/osv-schema/bindings/go/osvschema"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/threatd/threatd/core"
)

// SourceName is the provenance recorded on imported reports.
const SourceName = "osv"

// ecosystems maps OSV ecosystem names to threatd registries.
var ecosystems = map[string]string{
	"npm": core.RegistryNPM, "pypi": core.RegistryPyPI, "rubygems": core.RegistryRubyGems, "crates.io": core.RegistryCrates,
	"go": core.RegistryGo, "maven": core.RegistryMaven, "nuget": core.RegistryNuGet, "packagist": core.RegistryPackagist,
	"vscode": core.RegistryVSCode, "openvsx": core.RegistryOpenVSX,
}

// Source implements core.Source for OSV data.
type Source struct {
	// Now is the clock used to validate timestamps (time.Now when nil).
	Now func() time.Time
}

type input struct {
	name string
	open func() (io.ReadCloser, error)
}

// Read walks paths (files, folders, .zip archives) and yields every record.
func (s Source) Read(ctx context.Context, paths []string, _ map[string]string, fn func(core.SourceItem) error) error {
	var inputs []input
	var closers []io.Closer
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	for _, p := range paths {
		found, c, err := collect(p)
		if err != nil {
			if err := fn(core.SourceItem{Skipped: p, Reason: err.Error()}); err != nil {
				return err
			}
			continue
		}
		closers = append(closers, c...)
		inputs = append(inputs, found...)
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	for i, in := range inputs {
		if err := ctx.Err(); err != nil {
			return err
		}
		recs, err := readOne(in, now())
		if err != nil {
			if err := fn(core.SourceItem{Skipped: in.name, Reason: err.Error()}); err != nil {
				return err
			}
		}
		for j := range recs {
			if err := fn(core.SourceItem{Record: &recs[j]}); err != nil {
				return err
			}
		}
		if err := fn(core.SourceItem{FilesDone: i + 1, FilesTotal: len(inputs)}); err != nil {
			return err
		}
	}
	return nil
}

// collect lists the JSON records under path.
func collect(path string) ([]input, []io.Closer, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !fi.IsDir() {
		if strings.HasSuffix(strings.ToLower(path), ".zip") {
			return zipInputs(path)
		}
		return []input{fileInput(path)}, nil, nil
	}
	var out []input
	var closers []io.Closer
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch lower := strings.ToLower(p); {
		case d.IsDir():
		case strings.HasSuffix(lower, ".json"):
			out = append(out, fileInput(p))
		case strings.HasSuffix(lower, ".zip"):
			z, c, err := zipInputs(p)
			if err != nil {
				return err
			}
			out, closers = append(out, z...), append(closers, c...)
		}
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, closers, err
}

func fileInput(p string) input {
	return input{name: p, open: func() (io.ReadCloser, error) { return os.Open(p) }}
}

func zipInputs(path string) ([]input, []io.Closer, error) {
	z, err := zip.OpenReader(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: not a readable zip archive: %w", path, err)
	}
	var out []input
	for _, f := range z.File {
		if f.FileInfo().IsDir() || !strings.HasSuffix(strings.ToLower(f.Name), ".json") {
			continue
		}
		out = append(out, input{name: path + "!" + f.Name, open: f.Open})
	}
	return out, []io.Closer{z}, nil
}

// maxRecordBytes bounds one OSV file.
const maxRecordBytes = 4 << 20

func readOne(in input, now time.Time) ([]core.ImportRecord, error) {
	r, err := in.open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxRecordBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxRecordBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxRecordBytes)
	}
	var v osvschema.Vulnerability
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("not an OSV record: %v", err)
	}
	return Map(&v, now)
}

// Map turns one OSV record into import records, one per affected package.
func Map(v *osvschema.Vulnerability, now time.Time) ([]core.ImportRecord, error) {
	if v.Id == "" {
		return nil, fmt.Errorf("no id")
	}
	if len(v.Affected) == 0 {
		return nil, fmt.Errorf("%s: no affected package", v.Id)
	}
	if v.Published == nil || v.Modified == nil {
		return nil, fmt.Errorf("%s: published and modified are required", v.Id)
	}
	published, modified := v.Published.AsTime().UTC(), v.Modified.AsTime().UTC()
	var out []core.ImportRecord
	for i, a := range v.Affected {
		if a.Package == nil || a.Package.Name == "" {
			return nil, fmt.Errorf("%s: affected[%d] has no package", v.Id, i)
		}
		registry, ok := ecosystems[strings.ToLower(strings.SplitN(a.Package.Ecosystem, ":", 2)[0])]
		if !ok {
			return nil, fmt.Errorf("%s: ecosystem %q is not supported", v.Id, a.Package.Ecosystem)
		}
		upstream := v.Id
		if len(v.Affected) > 1 {
			upstream = fmt.Sprintf("%s/%s/%s", v.Id, registry, a.Package.Name)
		}
		sub := submission(v, a, registry, published, modified)
		th, err := core.NewThreat(sub, now)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", v.Id, err)
		}
		th.Source, th.UpstreamID = SourceName, upstream
		th.UpstreamModified = &modified
		th.VerifiedAt = &published
		th.AllVersions = allVersions(a)
		out = append(out, core.ImportRecord{Threat: th, Withdrawn: v.Withdrawn != nil})
	}
	return out, nil
}

func submission(v *osvschema.Vulnerability, a *osvschema.Affected, registry string, published, modified time.Time) core.Submission {
	str := func(s string) *string { return &s }
	desc := strings.TrimSpace(v.Summary)
	if desc == "" {
		desc = fmt.Sprintf("Malicious %s package %s", registry, a.Package.Name)
	}
	payload := clean(v.Details)
	if iocs := iocList(v.DatabaseSpecific); len(iocs) > 0 {
		var b strings.Builder
		b.WriteString(payload)
		b.WriteString("\n\n### Indicators of compromise (defanged)\n\n")
		for _, i := range iocs {
			b.WriteString("- " + core.Defang(i) + "\n")
		}
		payload = b.String()
	}
	var versions []string
	for _, ver := range a.Versions {
		if ver = strings.TrimSpace(ver); core.ValidVersion(ver) && !slices.Contains(versions, ver) && len(versions) < 1000 {
			versions = append(versions, ver)
		}
	}
	var refs []string
	for _, r := range v.References {
		if u := strings.TrimSpace(r.Url); (strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://")) && !strings.ContainsAny(u, " |") && len(refs) < 50 && !slices.Contains(refs, u) {
			refs = append(refs, u)
		}
	}
	var credits []string
	for _, c := range v.Credits {
		if n := strings.TrimSpace(c.Name); n != "" && len(credits) < 100 && len([]rune(n)) <= 256 {
			credits = append(credits, n)
		}
	}
	last := modified
	if last.Before(published) {
		last = published
	}
	s := core.Submission{
		ReportType: str(string(core.TypePackage)), ResourceIdentifier: str(a.Package.Name), Registry: str(registry),
		ThreatDescription: str(truncate(clean(desc), 20000)), PayloadDescription: str(truncate(payload, 200000)),
		OSVAdvisoryURL: str("https://osv.dev/vulnerability/" + v.Id), Tags: tags(v.DatabaseSpecific),
		FirstSeen: str(published.Format(time.RFC3339Nano)), LastSeen: str(last.Format(time.RFC3339Nano)),
		Contributors: credits,
	}
	if len(versions) > 0 {
		s.VersionInfo = str(strings.Join(versions, ", "))
	}
	if len(refs) > 0 {
		s.EvidenceReferences = str(strings.Join(refs, "|"))
	}
	return s
}

// allVersions: a range introduced at 0 with no fix affects every version.
func allVersions(a *osvschema.Affected) bool {
	for _, r := range a.Ranges {
		zero, fixed := false, false
		for _, e := range r.Events {
			if e.Introduced == "0" {
				zero = true
			}
			if e.Fixed != "" || e.LastAffected != "" || e.Limit != "" {
				fixed = true
			}
		}
		if zero && !fixed {
			return true
		}
	}
	return false
}

// tags are the upstream origins of the report (e.g. ghsa-malware, checkmarx).
func tags(ds *structpb.Struct) []string {
	out := []string{"malicious-package"}
	if ds == nil {
		return out
	}
	for _, o := range ds.Fields["malicious-packages-origins"].GetListValue().GetValues() {
		src := strings.TrimSpace(o.GetStructValue().GetFields()["source"].GetStringValue())
		if src != "" && len(src) <= 64 && !slices.Contains(out, src) && len(out) < 50 {
			out = append(out, src)
		}
	}
	return out
}

// iocList collects every string under database_specific.iocs.
func iocList(ds *structpb.Struct) []string {
	if ds == nil {
		return nil
	}
	var out []string
	var walk func(*structpb.Value)
	walk = func(v *structpb.Value) {
		switch x := v.GetKind().(type) {
		case *structpb.Value_StringValue:
			if s := strings.TrimSpace(x.StringValue); s != "" && !slices.Contains(out, s) {
				out = append(out, s)
			}
		case *structpb.Value_ListValue:
			for _, e := range x.ListValue.Values {
				walk(e)
			}
		case *structpb.Value_StructValue:
			keys := make([]string, 0, len(x.StructValue.Fields))
			for k := range x.StructValue.Fields {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x.StructValue.Fields[k])
			}
		}
	}
	if iocs, ok := ds.Fields["iocs"]; ok {
		walk(iocs)
	}
	return out
}

// clean removes control characters other than newlines and tabs.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, strings.ToValidUTF8(s, "\uFFFD"))
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
