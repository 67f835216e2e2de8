package firewall

import "time"

// Adapter is one registry's protocol as the firewall needs it, written
// once per registry (core/firewall/npm, pypi, goproxy …) as pure functions
// over requests and bytes: which requests are metadata and which are
// artifacts, the name and version an artifact request names, the versions
// and publish times a metadata document lists, and the rewrite that drops
// versions and points links back through the firewall. The HTTP side
// (core/api) is one proxy for every adapter: authentication, rate limits,
// the upstream cache, verdicts, refusals. Adding a registry is adding an
// Adapter (and naming it in core/firewall/registries).
//
// An adapter may also implement FileLister (artifacts found through a
// metadata document), VersionDocuments (documents of one version) and
// Auditor (a bulk-advisory endpoint).
type Adapter interface {
	// Registry names the registry as reports do (core.RegistryNPM …):
	// its routes are {base}/firewall/<Registry>/…, its settings
	// firewall.<Registry>.*.
	Registry() string
	// Defaults are the public registry the firewall fronts unless
	// firewall.<Registry>.upstream says otherwise, and the file hosts its
	// documents link to (firewall.<Registry>.file_hosts).
	Defaults() Upstream
	// Route reads a request. ok is false for a path of no known shape
	// (404); an *Unjudgeable error is a name, version or path the
	// firewall cannot judge (400): never passed upstream.
	Route(r Request) (rt Route, ok bool, err error)
	// Rewrite rewrites a metadata document (a Metadata route's) for
	// judge: refused versions gone, or marked as the protocol wants;
	// links pointing at base, the firewall's URL of the registry.
	Rewrite(doc Document, judge Judge, base string) (Rendering, error)
	// Versions reads the versions a metadata document lists, with their
	// publish times where the document gives them.
	Versions(doc Document) ([]Published, error)
}

// Upstream is where a registry's packages come from by default.
type Upstream struct {
	// URL is the public registry's root.
	URL string
	// FileHosts are further origins its documents link files to.
	FileHosts []string
}

// FileLister is an adapter whose artifact requests name a file that only
// a metadata document ties to a version and an upstream URL (npm
// tarballs, PyPI files): Route gives the document (Route.Index) and the
// file (Route.File).
type FileLister interface {
	Files(doc Document) (map[string]File, error)
}

// FileLocator is an adapter whose artifact requests name the version but
// whose files are at a URL a registry-wide document says (crates.io's
// config.json "dl"): Route gives the document (Route.Index) and no File.
type FileLocator interface {
	// Locate reads the document into what FileURL needs (kept while the
	// document is), then FileURL gives a version's file from it.
	Locate(doc Document) (Location, error)
	FileURL(loc Location, name, version string) (string, error)
}

// Location is what a FileLocator reads from its document.
type Location struct {
	// Template is the file URL with the adapter's markers.
	Template string
}

// Listing is an adapter with a registry-wide document that lists every
// package's versions and the checksum of each package's own document
// (RubyGems' /versions and /info): a Metadata route with Listing set.
type Listing interface {
	// RewriteListing rewrites doc: judges gives the Judge of each package
	// named (asked once, with every name; recent are those whose
	// quarantine the listing judges too), none for a package nothing of
	// which is refused; info gives a package's document (InfoPath) as
	// the firewall serves it.
	RewriteListing(doc Document, judges func(names []string, recent map[string]bool) (map[string]Judge, error), info func(name string) ([]byte, error)) (Rendering, error)
	InfoPath(name string) string
}

// Derived is an adapter whose Metadata routes with a Variant are computed
// from the bytes of the document's main rendering (Maven's .md5, .sha1,
// .sha256 and .sha512 of maven-metadata.xml): the main one is rendered,
// and kept, once; a variant never reads the facts again.
type Derived interface {
	Derive(main []byte, variant string) (Rendering, error)
}

// VersionKeys is an adapter whose documents list a version more than once,
// each with a publish time of its own (RubyGems' platforms: 1.0.0 and
// 1.0.0-java are pushed apart): listings, facts and routes name the
// version as listed (its key), and reports and waivers judge
// ReportVersion(key).
type VersionKeys interface {
	ReportVersion(key string) string
}

// Rooted is an adapter whose upstream setting is the URL of a document,
// not the root its paths are below (NuGet's service index): Root checks
// it and gives the upstream URL the firewall keeps.
type Rooted interface {
	Root(upstream string) (string, error)
}

// Based is an adapter whose documents are below URLs that its upstream's
// root document names (NuGet's service index names each resource's URL,
// wherever the server keeps it): an upstream path BasePrefix+"<key>/<rest>"
// is fetched at Bases(root)[key] + rest, the root document being the
// upstream setting's URL itself (the upstream path ""). Bases' URLs end
// in "/".
type Based interface {
	Bases(root Document) (map[string]string, error)
}

// BasePrefix starts the upstream paths of a Based adapter that are below
// a base.
const BasePrefix = "res/"

// VersionDocuments is an adapter with documents of one version (npm's
// /{name}/{version or tag}, Go's @latest), whose version is known once
// the upstream answers.
type VersionDocuments interface {
	// VersionOf reads the version the document is of.
	VersionOf(doc Document) (string, error)
	// RewriteVersion points the document's links at base.
	RewriteVersion(doc Document, name, base string) ([]byte, error)
	// Highest is the highest release among versions; VersionPath the
	// upstream path of a version's document. With them a Route.Fallback
	// answers, in place of a refused version, the highest one allowed.
	Highest(versions []string) string
	VersionPath(name, version string) string
}

// Queried is an adapter with search answers that list the versions of
// many packages (the VS Code gallery's extensionquery, Open VSX's -/query
// and -/search): Metadata routes with Query set.
type Queried interface {
	// QueryPaths are the paths, below the registry's, that are POSTs
	// (extensionquery): their bodies are read within a bound and handed to
	// Route in Request.Body.
	QueryPaths() []string
	// RewriteQuery rewrites a search answer. judges is asked once with
	// what it lists (by package, the versions with their publish times
	// where it gives them, else a zero time) and gives the Judge of each
	// package of which anything can be refused.
	RewriteQuery(doc Document, judges func(listed map[string][]Published) (map[string]Judge, error), base string) (Rendering, error)
}

// ListsVersions is a VersionDocuments adapter whose version documents
// list the package's other versions and link to them (Open VSX's
// allVersions): RewriteListed drops the refused ones and points the
// links at base. With it a Route.Fallback answers the highest allowed
// version's document, rewritten so.
type ListsVersions interface {
	RewriteListed(doc Document, judge Judge, base string) ([]byte, error)
}

// PostedFacts is a FactSource whose facts document is a POST (the
// Marketplace's extensionquery of one extension): FactsBody is its body.
type PostedFacts interface {
	FactsBody(name string) []byte
}

// Auditor is an adapter with a bulk-advisory endpoint (npm audit): POST
// {base}/firewall/<registry>/<AuditPath>.
type Auditor interface {
	AuditPath() string
	// ParseAudit reads the request body: the versions asked about, by name.
	ParseAudit(body []byte) (map[string][]string, error)
	// RenderAudit writes the answer: one advisory per refused version.
	RenderAudit(found []AuditFinding, site string) ([]byte, error)
}

// AuditFinding is one refused version an audit asked about.
type AuditFinding struct {
	Name    string
	Blocked *Blocked
}

// Request is a firewall request as an adapter reads it.
type Request struct {
	// Path is the escaped path below {base}/firewall/<registry>/.
	Path string
	// Query is the raw query; Accept the client's Accept header.
	Query, Accept string
	// Body is a POST's body (Queried.QueryPaths), read whole within a
	// bound; nil for a GET.
	Body []byte
}

// Kind is what a route asks for.
type Kind int

// The kinds of routes.
const (
	// PassThrough is an upstream endpoint the firewall passes on at
	// Route.Upstream (a checked path): npm's /-/ping, Go's /sumdb/.
	PassThrough Kind = iota + 1
	// Metadata is a document that lists versions: fetched, rewritten
	// (Adapter.Rewrite), kept. A Metadata route without a Name is a
	// registry-wide document (crates.io's config.json): rewritten with a
	// Judge that refuses nothing.
	Metadata
	// VersionDocument is a document of one version (VersionDocuments).
	VersionDocument
	// Artifact is a file of one version: judged, then streamed.
	Artifact
)

// Refusal is how a route's refusals are written.
type Refusal int

// The ways refusals are written.
const (
	// RefuseJSON is the 403 JSON of docs/firewall.md.
	RefuseJSON Refusal = iota
	// RefusePlain is text/plain unless JSON is asked for: the go command
	// prints a refusal's body only when it is plain text.
	RefusePlain
	// RefuseReason also carries the message in the HTTP/1.1 reason
	// phrase: pip prints only the status line of a failed download.
	RefuseReason
)

// Route is what a request asks for, as an adapter judged it.
type Route struct {
	Kind Kind
	// Name is the package (none for PassThrough); Version the version the
	// path names ("" when it names none: a document of a tag, a file
	// found through Index).
	Name, Version string
	// Upstream is the path to fetch below the upstream root (the public
	// one, or the private one for a private name), built from what was
	// judged, never copied from the request; for an Artifact found
	// through Index, "".
	Upstream string
	// Index and File: an Artifact the path does not give the version of
	// is File in the table FileLister.Files reads from the metadata
	// document at Index; Suffix is added to its URL (PyPI's .metadata).
	Index, File, Suffix string
	// Unjudged serves an Artifact without judging it (PyPI's PEP 658
	// metadata, which runs nothing: pip reads it to resolve).
	Unjudged bool
	// Accept is what the upstream is asked with; Vary the answer's Vary.
	Accept, Vary string
	// ContentType is the type an Artifact or PassThrough is served as;
	// "" serves a PassThrough as JSON when the upstream says JSON, else
	// as plain text, unless its type is one of Keep.
	ContentType string
	Keep        []string
	// RefuseEvery refuses a Metadata route outright when a report names
	// every version (npm's document, Go's version list).
	RefuseEvery bool
	// Listing marks the registry-wide document of a Listing adapter.
	Listing bool
	// Variant is passed to Rewrite as Document.Variant: another rendering
	// of the same upstream document (Maven's checksum files of
	// maven-metadata.xml), kept apart from the document's.
	Variant string
	// Fallback, for a VersionDocument whose version is refused: the
	// metadata document whose allowed versions give the answer instead
	// (Go's @latest answers the highest allowed version's .info).
	Fallback string
	Refusal  Refusal
	// Readings, for an Artifact whose path reads more than one way (the
	// gem file rails-5-x-1.0.gem: rails 5 on platform x-1.0, or rails-5-x
	// 1.0), are the routes of every reading, each with its Listed
	// document (the package's versions: Adapter.Versions reads them). The
	// file is the readings' whose document lists their Version: refused
	// when any of them is refused, 404 when none lists it.
	Readings []Route
	Listed   string
	// OwnFacts: the Metadata document says when each version it lists
	// was published (NuGet's registration pages): the quarantine reads it.
	OwnFacts bool
	// Query marks a Metadata route whose document is a search answer
	// listing many packages (Queried.RewriteQuery rewrites it).
	Query bool
	// Body, when not nil, is POSTed to Upstream (JSON), rebuilt from what
	// the adapter read of the request's, never copied: the answer is
	// kept by the URL and the body.
	Body []byte
}

// Document is an upstream document handed to an adapter.
type Document struct {
	Body        []byte
	ContentType string
	// URL is where it was fetched (relative links resolve against it);
	// Name the package it is of, as the route named it.
	URL, Name string
	// Variant is the route's Variant.
	Variant string
	// LastModified is the upstream's Last-Modified (zero when it sent
	// none): Maven's publish time of a version is its .pom's.
	LastModified time.Time
	// Bases are a Based adapter's bases (Based.Bases of its root
	// document), for the links a document holds.
	Bases map[string]string
}

// Rendering is a rewritten document and the type it is served as.
type Rendering struct {
	Body        []byte
	ContentType string
}

// Judge says whether version may be served; when not, why is the text a
// client shows (PyPI marks a refused file yanked with it).
type Judge func(version string) (refused bool, why string)

// File is an artifact a metadata document lists.
type File struct {
	// URL is its upstream URL, absolute.
	URL string
	// Versions are the versions it may be (one, unless the document is
	// odd; "" for one that cannot be read, which every report of the
	// package refuses): it is refused when any of them is.
	Versions []string
}

// Published is a version a metadata document lists and when it was
// published (zero when the document does not say).
type Published struct {
	Version string
	Time    time.Time
	// NewScripts are the install scripts it declares that the version
	// before it (Previous) did not (npm's install_scripts rule).
	NewScripts []string
	Previous   string
}

// FactSource is an adapter that says where the facts of a package's
// versions are (publish times, install scripts: Versions reads them),
// for the quarantine and install_scripts rules: one document of every
// version (npm's full document, PyPI's JSON page), or one per version
// (Go's .info).
type FactSource interface {
	// FactsDocument is the upstream path and Accept of the document of
	// every version of name; path "" when each version has its own.
	FactsDocument(name string) (path, accept string)
	// VersionFactsPath is the upstream path of one version's document.
	VersionFactsPath(name, version string) string
	// Scripts says whether Versions reads install scripts.
	Scripts() bool
}

// JudgeOf is the Judge of a verdict: a version is refused when a report
// blocks it, with the refusal's message.
func JudgeOf(v Verdict) Judge {
	return func(version string) (bool, string) {
		if b := v.Check(version); b != nil {
			return true, b.Message()
		}
		return false, ""
	}
}

// Archives locates the archive package analysis reads of each version
// (docs/analysis.md): the adapters of AnalysedEcosystems implement it.
type Archives interface {
	// ArchiveIndex is the upstream path, and its Accept, of the document
	// that lists name's versions.
	ArchiveIndex(name string) (path, accept string)
	// ArchiveURLs reads that document: each version's archive, an
	// absolute URL or a path under the upstream.
	ArchiveURLs(doc Document) (map[string]string, error)
}
