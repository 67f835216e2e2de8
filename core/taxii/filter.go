package taxii

import (
	"slices"
	"time"

	"github.com/threatd/threatd/core"
)

// filter keeps the objects the match filters select. Each object has one
// version here (the current one), so "first", "last" and "all" keep it and
// a timestamp keeps it when it is that version.
func (x *Service) filter(objs []Object, q Query) []Object {
	if q.AddedAfter.IsZero() && len(q.IDs) == 0 && len(q.Types) == 0 && len(q.Versions) == 0 && len(q.SpecVersions) == 0 {
		return objs
	}
	var out []Object
	for _, o := range objs {
		if !q.AddedAfter.IsZero() && !o.DateAdded.After(q.AddedAfter) {
			continue
		}
		if len(q.IDs) > 0 && !slices.Contains(q.IDs, o.ID) {
			continue
		}
		if len(q.Types) > 0 && !slices.Contains(q.Types, o.Type) {
			continue
		}
		if len(q.SpecVersions) > 0 && !slices.Contains(q.SpecVersions, o.SpecVersion) {
			continue
		}
		if len(q.Versions) > 0 && !matchVersion(q.Versions, o.Version) {
			continue
		}
		out = append(out, o)
	}
	return out
}

func matchVersion(want []string, version string) bool {
	v, err := time.Parse(time.RFC3339Nano, version)
	for _, w := range want {
		switch w {
		case "first", "last", "all":
			return true
		}
		if t, perr := time.Parse(time.RFC3339Nano, w); perr == nil && err == nil && t.Equal(v) {
			return true
		}
	}
	return false
}

// ParseVersions checks match[version] values.
func ParseVersions(values []string) error {
	for _, v := range values {
		switch v {
		case "first", "last", "all":
			continue
		}
		if _, err := ParseTimestamp("match[version]", v); err != nil {
			return core.Invalid("match[version]", "must be first, last, all or an RFC 3339 timestamp (got %q)", core.Shorten(v))
		}
	}
	return nil
}
