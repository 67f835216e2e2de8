package npm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"

	"golang.org/x/mod/semver"
)

// Rewrite returns an npm package document (full or abbreviated) without
// the versions blocked says are blocked — gone from versions, time and
// dist-tags, where a tag on a removed version moves to the highest
// remaining release or goes — and with every dist.tarball pointing at
// base/{name}/-/{file}. It works on the document's bytes: members it
// does not change are copied as they are, so a 60 MiB document costs about
// its size twice in memory and one pass to read. Keys are compared
// decoded (an escaped "vers\u0069ons" is versions) and every occurrence of
// a duplicated key is rewritten, so no spelling of the document hides a
// version from the rewrite. A document that is not a JSON object is an
// error.
func Rewrite(doc []byte, blocked func(version string) bool, name, base string) ([]byte, error) {
	if !json.Valid(doc) {
		return nil, errors.New("the package document is not valid JSON")
	}
	s := scanner{b: doc}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return nil, errors.New("the package document is not a JSON object")
	}
	// First pass: the package's name and its versions, kept and removed.
	removed := map[string]bool{}
	var kept []string
	docName := ""
	if err := s.members(s.i, func(k string, _, vs, ve int) error {
		switch k {
		case "name":
			if doc[vs] == '"' {
				docName = decodeString(doc[vs:ve])
			}
		case "versions":
			if doc[vs] != '{' {
				return nil
			}
			return s.members(vs, func(ver string, _, _, _ int) error {
				if blocked(ver) {
					removed[ver] = true
				} else {
					kept = append(kept, ver)
				}
				return nil
			})
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if docName == "" {
		docName = name
	}
	tarballBase := base + "/" + Escape(docName) + "/-/"
	highest := ""
	if len(removed) > 0 {
		highest = highestRelease(kept)
	}
	out := make([]byte, 0, len(doc)+len(doc)/16)
	err := s.rewriteObject(&out, s.i, func(k string, vs, ve int) (bool, error) {
		switch k {
		case "versions":
			if doc[vs] == 'n' { // null
				return false, nil
			}
			if doc[vs] != '{' {
				return false, errors.New("versions is not an object")
			}
			return true, s.rewriteObject(&out, vs, func(ver string, vvs, vve int) (bool, error) {
				if removed[ver] {
					return true, nil // dropped: nothing written
				}
				if err := s.rewriteVersion(&out, vvs, vve, tarballBase); err != nil {
					return true, fmt.Errorf("versions[%s]: %w", ver, err)
				}
				return true, nil
			}, removed)
		case "time":
			if len(removed) == 0 || doc[vs] != '{' {
				return false, nil
			}
			return true, s.rewriteObject(&out, vs, nil, removed)
		case "dist-tags":
			if len(removed) == 0 || doc[vs] == 'n' {
				return false, nil
			}
			if doc[vs] != '{' {
				return false, errors.New("dist-tags is not an object")
			}
			gone := map[string]bool{}
			err := s.members(vs, func(tag string, _, tvs, tve int) error {
				if doc[tvs] != '"' {
					return fmt.Errorf("dist-tags[%s] is not a string", tag)
				}
				if removed[decodeString(doc[tvs:tve])] && highest == "" {
					gone[tag] = true
				}
				return nil
			})
			if err != nil {
				return false, err
			}
			return true, s.rewriteObject(&out, vs, func(tag string, tvs, tve int) (bool, error) {
				if removed[decodeString(doc[tvs:tve])] {
					out = appendJSONString(out, highest)
					return true, nil
				}
				return false, nil
			}, gone)
		}
		return false, nil
	}, nil)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// rewriteVersion copies one version's document, with its dist.tarball
// (every occurrence) pointing at tarballBase + the file's name. A null
// version is copied; any other non-object is an error.
func (s *scanner) rewriteVersion(out *[]byte, vs, ve int, tarballBase string) error {
	switch s.b[vs] {
	case '{':
	case 'n':
		*out = append(*out, s.b[vs:ve]...)
		return nil
	default:
		return errors.New("a version is not an object")
	}
	return s.rewriteObject(out, vs, func(k string, dvs, dve int) (bool, error) {
		if k != "dist" {
			return false, nil
		}
		if s.b[dvs] != '{' {
			return false, errors.New("dist is not an object")
		}
		return true, s.rewriteObject(out, dvs, func(k string, tvs, tve int) (bool, error) {
			if k != "tarball" || s.b[tvs] != '"' {
				return false, nil
			}
			t := decodeString(s.b[tvs:tve])
			if t == "" {
				return false, nil
			}
			*out = appendJSONString(*out, tarballBase+path.Base(t))
			return true, nil
		}, nil)
	}, nil)
}

// rewriteObject writes the object at start: each member whose decoded key
// is in drop is left out; for the others, value may write the member's
// value itself (true) or leave it to be copied (false).
func (s *scanner) rewriteObject(out *[]byte, start int, value func(k string, vs, ve int) (bool, error), drop map[string]bool) error {
	*out = append(*out, '{')
	first := true
	err := s.members(start, func(k string, ks, vs, ve int) error {
		if drop[k] {
			return nil
		}
		if !first {
			*out = append(*out, ',')
		}
		first = false
		*out = append(*out, s.b[ks:vs]...) // the key, the colon and the space between
		if value != nil {
			done, err := value(k, vs, ve)
			if err != nil {
				return err
			}
			if done {
				return nil
			}
		}
		*out = append(*out, s.b[vs:ve]...)
		return nil
	})
	*out = append(*out, '}')
	return err
}

// scanner walks a valid JSON document (json.Valid checked it).
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

// skip moves past the value at s.i and returns where it ends.
func (s *scanner) skip() int {
	switch s.b[s.i] {
	case '"':
		s.skipString()
	case '{', '[':
		depth := 0
		for {
			// Jump to the next quote or bracket.
			j := bytes.IndexAny(s.b[s.i:], "\"{}[]")
			s.i += j
			switch s.b[s.i] {
			case '"':
				s.skipString()
				continue
			case '{', '[':
				depth++
			default:
				depth--
			}
			s.i++
			if depth == 0 {
				break
			}
		}
	default:
		for s.i < len(s.b) && bytes.IndexByte([]byte(",}] \t\r\n"), s.b[s.i]) < 0 {
			s.i++
		}
	}
	return s.i
}

// skipString moves past the string that starts at s.i.
func (s *scanner) skipString() {
	s.i++
	for {
		j := bytes.IndexByte(s.b[s.i:], '"')
		end := s.i + j
		// Escaped when an odd number of backslashes precede it.
		k := end
		for k > s.i && s.b[k-1] == '\\' {
			k--
		}
		s.i = end + 1
		if (end-k)%2 == 0 {
			return
		}
	}
}

// members calls fn for each member of the object at start with its decoded
// key, where its key starts and where its value starts and ends.
func (s *scanner) members(start int, fn func(k string, ks, vs, ve int) error) error {
	save := s.i
	defer func() { s.i = save }()
	s.i = start + 1
	for {
		s.ws()
		if s.b[s.i] == '}' {
			return nil
		}
		if s.b[s.i] == ',' {
			s.i++
			s.ws()
		}
		ks := s.i
		ke := s.skip()
		s.ws()
		s.i++ // the colon
		s.ws()
		vs := s.i
		ve := s.skip()
		if err := fn(decodeString(s.b[ks:ke]), ks, vs, ve); err != nil {
			return err
		}
	}
}

// decodeString is a JSON string's value.
func decodeString(q []byte) string {
	if bytes.IndexByte(q, '\\') < 0 {
		return string(q[1 : len(q)-1])
	}
	var v string
	_ = json.Unmarshal(q, &v)
	return v
}

// appendJSONString writes s as a JSON string, as encoding/json does.
func appendJSONString(out []byte, s string) []byte {
	b, _ := json.Marshal(s)
	return append(out, b...)
}

// highestRelease is the highest release among npm versions in semver
// order, or the highest pre-release when there is no release; "" when
// none is semver.
func highestRelease(versions []string) string {
	var best, bestPre string
	for _, ver := range versions {
		sv := "v" + ver
		switch {
		case !semver.IsValid(sv):
		case semver.Prerelease(sv) == "":
			if best == "" || semver.Compare(sv, "v"+best) > 0 {
				best = ver
			}
		case bestPre == "" || semver.Compare(sv, "v"+bestPre) > 0:
			bestPre = ver
		}
	}
	if best != "" {
		return best
	}
	return bestPre
}
