// Package threatfox is the source plugin of abuse.ch ThreatFox's JSON
// export (docs/ingestion.md): `threatd import threatfox full.json`. The
// export is one object, IOC id → a list of one IOC; each domain, URL and
// ip:port IOC becomes a verified report of source threatfox whose upstream
// id is ThreatFox's (an ip:port is an ip report, its port in the report's
// text); a hash IOC has no report type here and is skipped with the
// reason.
//
// A file is read twice: once to check it whole (one object of lists of
// IOC objects, no value over MaxEntry bytes), so that a file that is not a
// ThreatFox export, or is broken anywhere, is refused before anything is
// imported; then to map and yield its IOCs.
package threatfox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/plugins/sourcekit"
)

// SourceName is the provenance recorded on imported reports.
const SourceName = "threatfox"

// MaxEntry bounds one IOC's list in the file: ThreatFox's are well under a
// kilobyte; a larger one is a broken or hostile file.
const MaxEntry = 64 << 10

// IOC is one entry as the export writes it.
type IOC struct {
	Value            string          `json:"ioc_value"`
	Type             string          `json:"ioc_type"`
	ThreatType       string          `json:"threat_type"`
	Malware          string          `json:"malware"`
	MalwarePrintable string          `json:"malware_printable"`
	Confidence       json.RawMessage `json:"confidence_level"`
	FirstSeen        *string         `json:"first_seen_utc"`
	LastSeen         *string         `json:"last_seen_utc"`
	Reference        *string         `json:"reference"`
	Tags             *string         `json:"tags"`
	Reporter         string          `json:"reporter"`
}

// Source implements core.Source for ThreatFox's JSON export.
type Source struct {
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Read checks every path whole, then yields its IOCs.
func (s Source) Read(ctx context.Context, paths []string, settings map[string]string, known core.Known, fn func(core.SourceItem) error) error {
	if err := sourcekit.CheckSettings(SourceName, settings); err != nil {
		return err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	for _, p := range paths {
		var ids sourcekit.Unique
		n := 0
		if err := each(ctx, p, func(id string, _ IOC) error {
			n++
			return ids.Add(p, id, fmt.Sprintf("entry %d", n))
		}); err != nil {
			return err
		}
	}
	for i, p := range paths {
		b := &sourcekit.Batch{Source: SourceName, Known: known, Yield: fn}
		err := each(ctx, p, func(id string, ioc IOC) error {
			label := fmt.Sprintf("%s IOC %s", p, id)
			_, modified, err := times(ioc)
			if err != nil {
				return fn(core.SourceItem{Skipped: label, Reason: err.Error(), UpstreamID: id})
			}
			return b.Add(ctx, sourcekit.Pending{ID: id, Modified: modified, Label: label, Map: func() (core.ImportRecord, error) { return record(id, ioc, now()) }})
		})
		if err == nil {
			err = b.Flush(ctx)
		}
		if err != nil {
			return err
		}
		if err := fn(core.SourceItem{FilesDone: i + 1, FilesTotal: len(paths)}); err != nil {
			return err
		}
	}
	return nil
}

// exportShape is a ThreatFox JSON export's shape: an object of IOC ids, each a
// list of one IOC.
var exportShape = sourcekit.Object{Max: MaxEntry, What: "an IOC's entry", Members: "IOCs",
	Label: func(id string) string { return "IOC " + id },
	NotShape: func(path, what string) error {
		return fmt.Errorf("%s: not a ThreatFox JSON export (an object of IOC ids, each a list of IOCs): %s (nothing was imported)", path, what)
	},
	Key: func(id string) error {
		if id == "" || len(id) > 20 || strings.Trim(id, "0123456789") != "" {
			return fmt.Errorf("IOC id %q is not a ThreatFox id (digits)", id)
		}
		return nil
	}}

// each reads the file at path, checks its shape, and calls fn with each
// IOC and its id, in file order.
func each(ctx context.Context, path string, fn func(id string, ioc IOC) error) error {
	return exportShape.Each(ctx, path, func(id string, raw json.RawMessage) error {
		var list []IOC
		if err := json.Unmarshal(raw, &list); err != nil {
			return exportShape.NotShape(path, fmt.Sprintf("IOC %s: %v", id, err))
		}
		if len(list) != 1 {
			return exportShape.NotShape(path, fmt.Sprintf("IOC %s is a list of %d, want 1", id, len(list)))
		}
		return fn(id, list[0])
	})
}

// times are an IOC's first-seen time and its version (its last-seen time,
// else its first).
func times(i IOC) (first, modified time.Time, err error) {
	if i.FirstSeen == nil {
		return first, modified, errors.New("first_seen_utc is missing")
	}
	if first, err = time.Parse(time.DateTime, *i.FirstSeen); err != nil {
		return first, modified, fmt.Errorf("first_seen_utc %q is not a UTC time of the form 2006-01-02 15:04:05", *i.FirstSeen)
	}
	modified = first
	if i.LastSeen != nil && *i.LastSeen != "" {
		last, err := time.Parse(time.DateTime, *i.LastSeen)
		if err != nil {
			return first, modified, fmt.Errorf("last_seen_utc %q is not a UTC time of the form 2006-01-02 15:04:05", *i.LastSeen)
		}
		if last.After(modified) {
			modified = last
		}
	}
	return first, modified, nil
}

// record is one IOC as an imported report.
func record(id string, i IOC, now time.Time) (core.ImportRecord, error) {
	first, modified, err := times(i)
	if err != nil {
		return core.ImportRecord{}, err
	}
	value := strings.TrimSpace(i.Value)
	var typ core.ReportType
	port := ""
	switch i.Type {
	case "domain":
		typ = core.TypeDomain
	case "url":
		typ = core.TypeURL
	case "ip:port":
		host, p, err := net.SplitHostPort(value)
		if err != nil {
			return core.ImportRecord{}, fmt.Errorf("ioc_value %q is not an ip:port", value)
		}
		if n, err := strconv.Atoi(p); err != nil || n < 0 || n > 65535 {
			return core.ImportRecord{}, fmt.Errorf("ioc_value %q: the port is not 0-65535", value)
		}
		typ, value, port = core.TypeIP, host, p
	default:
		return core.ImportRecord{}, fmt.Errorf("ioc_type %q: threatd reports domains, URLs and addresses, not this type", i.Type)
	}
	str := func(s string) *string { return &s }
	malware := strings.TrimSpace(i.MalwarePrintable)
	if malware == "" {
		malware = strings.TrimSpace(i.Malware)
	}
	desc := "ThreatFox: " + strings.ReplaceAll(strings.TrimSpace(i.ThreatType), "_", " ")
	if malware != "" {
		desc += " (" + malware + ")"
	}
	var payload strings.Builder
	fmt.Fprintf(&payload, "Listed by ThreatFox (IOC %s) as %s", id, strings.TrimSpace(i.ThreatType))
	if malware != "" {
		fmt.Fprintf(&payload, " of %s", malware)
	}
	if port != "" {
		fmt.Fprintf(&payload, ", port %s", port)
	}
	if c := strings.Trim(string(i.Confidence), `"`); c != "" && c != "null" {
		fmt.Fprintf(&payload, ", confidence %s %%", c)
	}
	if r := strings.TrimSpace(i.Reporter); r != "" {
		fmt.Fprintf(&payload, ", reported by %s", r)
	}
	payload.WriteString(".")
	tags := []string{"threatfox"}
	if i.Tags != nil {
		for t := range strings.SplitSeq(*i.Tags, ",") {
			if t = strings.ToLower(strings.TrimSpace(t)); t != "" && len(tags) < 20 {
				tags = append(tags, t)
			}
		}
	}
	sub := core.Submission{ReportType: str(string(typ)), ResourceIdentifier: str(value), ThreatDescription: str(desc),
		PayloadDescription: str(payload.String()), Tags: tags}
	refs := []string{"https://threatfox.abuse.ch/ioc/" + id + "/"}
	if i.Reference != nil {
		if r := strings.TrimSpace(*i.Reference); (strings.HasPrefix(r, "https://") || strings.HasPrefix(r, "http://")) && !strings.ContainsAny(r, " |") && len(r) <= core.MaxIdentifierBytes {
			refs = append(refs, r)
		}
	}
	sub.EvidenceReferences = str(strings.Join(refs, "|"))
	th, err := core.NewImportedThreat(sub, now)
	if err != nil {
		return core.ImportRecord{}, err
	}
	th.Source, th.UpstreamID = SourceName, id
	th.UpstreamModified, th.VerifiedAt = &modified, &first
	return core.ImportRecord{Threat: th}, nil
}
