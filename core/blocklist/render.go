package blocklist

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	"github.com/threatd/threatd/core"
)

// The formats (docs/blocklists.md).
const (
	RPZ       = "rpz"
	HostsFile = "hosts"
	Domains   = "domains"
	Dnsmasq   = "dnsmasq"
	Unbound   = "unbound"
	AdGuard   = "adguard"
	IPs       = "ips"
)

// Formats are the formats, in the order the documentation lists them.
var Formats = []string{RPZ, HostsFile, Domains, Dnsmasq, Unbound, AdGuard, IPs}

// DefaultZone is blocklists.rpz_zone's default.
const DefaultZone = "rpz.threatd."

// Meta is what a rendering says beside the entries.
type Meta struct {
	// Zone is the RPZ zone's name, ending in a dot.
	Zone string
	// Serial is the RPZ zone's SOA serial: it must grow whenever the
	// content changes (resolvers that transfer the zone compare it).
	Serial uint32
}

// CheckFormat refuses a format that is not one of Formats.
func CheckFormat(format string) error {
	if !slices.Contains(Formats, format) {
		return core.Invalid("format", "must be one of %s (got %q)", strings.Join(Formats, ", "), format)
	}
	return nil
}

// lineFormat is a format of one line per entry: a header saying how many
// entries (%s) and each entry between a prefix and a suffix.
type lineFormat struct {
	header, prefix, suffix string
	// ips: the entries are the addresses, not the names.
	ips bool
}

// lineFormats are every format but RPZ, whose zone has more than lines.
var lineFormats = map[string]lineFormat{
	HostsFile: {header: "# threatd block list (hosts): %s named by verified reports\n", prefix: "0.0.0.0 ", suffix: "\n"},
	Domains:   {header: "# threatd block list: %s named by verified reports\n", suffix: "\n"},
	Dnsmasq:   {header: "# threatd block list (dnsmasq): %s named by verified reports\n", prefix: "address=/", suffix: "/\n"},
	Unbound:   {header: "# threatd block list (Unbound): %s named by verified reports\nserver:\n", prefix: "local-zone: \"", suffix: ".\" always_nxdomain\n"},
	AdGuard:   {header: "! Title: threatd block list\n! %s named by verified reports\n", prefix: "||", suffix: "^\n"},
	IPs:       {header: "# threatd block list: %s named by verified reports\n", suffix: "\n", ips: true},
}

// Render writes one format of the lists: domains (in SortDomains order)
// and addresses (in SortIPs order), as Snapshot gives them. The same
// entries and meta give the same bytes.
func Render(w io.Writer, format string, domains, ips []string, m Meta) error {
	if err := CheckFormat(format); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if format == RPZ {
		renderRPZ(bw, domains, m)
		return bw.Flush()
	}
	f := lineFormats[format]
	entries, what := domains, core.Count(len(domains), "domain", "domains")
	if f.ips {
		entries, what = ips, core.Count(len(ips), "address", "addresses")
	}
	fmt.Fprintf(bw, f.header, what)
	for _, e := range entries {
		bw.WriteString(f.prefix)
		bw.WriteString(e)
		bw.WriteString(f.suffix)
	}
	return bw.Flush()
}

// renderRPZ writes the RPZ zone: its SOA and NS, then each name and its
// subdomains answered with NXDOMAIN (CNAME .).
func renderRPZ(bw *bufio.Writer, domains []string, m Meta) {
	zone := m.Zone
	if zone == "" {
		zone = DefaultZone
	}
	// A name is at most 255 bytes on the wire (254 written with its
	// final dot): "*." + name + "." + zone must fit.
	fits := func(d string) bool { return len(d)+2+1+len(zone) <= 254 }
	long := 0
	for _, d := range domains {
		if !fits(d) {
			long++
		}
	}
	what := core.Count(len(domains)-long, "domain", "domains")
	fmt.Fprintf(bw, "; threatd block list (RPZ): %s named by verified reports\n", what)
	if long > 0 {
		fmt.Fprintf(bw, "; %d left out: too long under the zone's name %s\n", long, zone)
	}
	fmt.Fprintf(bw, "$ORIGIN %s\n$TTL 300\n", zone)
	fmt.Fprintf(bw, "@ IN SOA localhost. hostmaster.localhost. %d 3600 600 604800 300\n", m.Serial)
	bw.WriteString("@ IN NS localhost.\n")
	for _, d := range domains {
		if !fits(d) {
			continue
		}
		bw.WriteString(d)
		bw.WriteString(" CNAME .\n*.")
		bw.WriteString(d)
		bw.WriteString(" CNAME .\n")
	}
}

// SortDomains sorts names by their labels from the right (example.com,
// then a.example.com, then b.example.com, then example.net): a zone's
// names in the order DNS tools list them, the same whatever order they
// came in.
func SortDomains(ds []string) {
	slices.SortFunc(ds, func(a, b string) int {
		for {
			ai, bi := strings.LastIndexByte(a, '.'), strings.LastIndexByte(b, '.')
			al, bl := a[ai+1:], b[bi+1:]
			if c := strings.Compare(al, bl); c != 0 {
				return c
			}
			switch {
			case ai < 0 && bi < 0:
				return 0
			case ai < 0:
				return -1
			case bi < 0:
				return 1
			}
			a, b = a[:ai], b[:bi]
		}
	})
}

// SortIPs sorts addresses (as Of writes them) in address order, IPv4
// first.
func SortIPs(ips []string) {
	addrs := make([]netip.Addr, len(ips))
	for i, s := range ips {
		addrs[i] = netip.MustParseAddr(s)
	}
	slices.SortFunc(addrs, netip.Addr.Compare)
	for i, a := range addrs {
		ips[i] = a.String()
	}
}
