// Package maven is the registry firewall's adapter for Maven repositories
// (a settings.xml mirror of central): maven-metadata.xml without refused
// versions, <latest> and <release> recomputed, its checksum files those
// of the document served; every file of a refused version 403. Packages
// are named as OSV names them, groupId:artifactId.
package maven

import (
	"strings"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/firewall"
)

// Kind is what a repository request asks for.
type Kind int

// The kinds of requests.
const (
	// Metadata is an artifact's maven-metadata.xml, or one of its
	// checksum files (Checksum is then its extension).
	Metadata Kind = iota + 1
	// File is a file of one version (a .pom, a .jar, a classifier, their
	// checksums, a snapshot's own metadata).
	File
)

// Checksums are the checksum files Maven reads beside a file.
var Checksums = []string{".md5", ".sha1", ".sha256", ".sha512"}

// Request is a repository request, as judged.
type Request struct {
	Kind Kind
	// Group and Artifact name the package; Version a File's version.
	Group, Artifact, Version string
	// Checksum is a Metadata request's checksum extension ("" for the
	// document itself).
	Checksum string
	// Path is the path to fetch upstream, rebuilt from the parts judged.
	Path string
}

// Name is the package as OSV names it.
func (r Request) Name() string { return r.Group + ":" + r.Artifact }

const metadataFile = "maven-metadata.xml"

// Parse reads the escaped path below the repository root. A path of an
// unknown shape is (Request{}, false, nil); one with a part the firewall
// cannot judge is a *firewall.Unjudgeable.
func Parse(escaped string) (Request, bool, error) {
	segs := strings.Split(escaped, "/")
	for _, s := range segs {
		if !firewall.NamePart(s, ".-_+") {
			return Request{}, false, firewall.CannotJudge(core.RegistryMaven, "path", escaped,
				"each part of a Maven path is letters, digits and .-_+ (no empty, . or .. part, nothing escaped)")
		}
	}
	n := len(segs)
	last := segs[n-1]
	if base, ext := splitChecksum(last); base == metadataFile {
		switch {
		case n >= 4 && strings.HasSuffix(segs[n-2], "-SNAPSHOT"):
			// A snapshot version's own metadata: a file of that version.
			return Request{Kind: File, Group: strings.Join(segs[:n-3], "."), Artifact: segs[n-3], Version: segs[n-2], Path: escaped}, true, nil
		case n >= 3:
			r := Request{Kind: Metadata, Group: strings.Join(segs[:n-2], "."), Artifact: segs[n-2], Checksum: ext}
			r.Path = strings.Join(segs[:n-1], "/") + "/" + metadataFile
			return r, true, nil
		}
		return Request{}, false, nil
	}
	if n < 4 {
		return Request{}, false, nil
	}
	artifact, version := segs[n-3], segs[n-2]
	prefix := artifact + "-" + strings.TrimSuffix(version, "-SNAPSHOT")
	if !strings.HasPrefix(last, prefix) {
		return Request{}, false, nil
	}
	return Request{Kind: File, Group: strings.Join(segs[:n-3], "."), Artifact: artifact, Version: version, Path: escaped}, true, nil
}

// splitChecksum splits a checksum extension from a file name.
func splitChecksum(name string) (string, string) {
	for _, ext := range Checksums {
		if strings.HasSuffix(name, ext) {
			return strings.TrimSuffix(name, ext), ext
		}
	}
	return name, ""
}

// PomPath is the upstream path of a version's .pom.
func PomPath(name, version string) string {
	group, artifact, _ := strings.Cut(name, ":")
	return strings.ReplaceAll(group, ".", "/") + "/" + artifact + "/" + version + "/" + artifact + "-" + version + ".pom"
}
