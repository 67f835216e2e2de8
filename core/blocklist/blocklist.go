// Package blocklist is what verified reports put on a network's block
// lists (docs/blocklists.md): the domains, URL hosts and IP addresses they
// name, as their resource or as an indicator check-malicious
// match=indicators finds, never the shared infrastructure the indicator
// rules exclude (blocking github.com or a CDN would break everybody's
// traffic); a URL whose host is an address counts as that address. A Set
// keeps them for every verified report, changed report by report, and
// renders the seven formats resolvers, hosts files and firewalls read.
package blocklist

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/ioc"
)

// Hosts are the names and addresses one report puts on the lists, each
// sorted and listed once.
type Hosts struct {
	Domains []string
	IPs     []string
}

// Empty says whether the report puts nothing on the lists.
func (h Hosts) Empty() bool { return len(h.Domains) == 0 && len(h.IPs) == 0 }

// Of is what the verified report t puts on the lists: its indicators as
// storage keeps them (t.IOCs, its own resource among them) that a look-up
// by value finds (ioc.Searchable), of type domain, url (its host) or ip,
// less shared infrastructure and anything that is not a name a resolver
// can hold.
func Of(t core.Threat) Hosts {
	var h Hosts
	for _, ind := range t.IOCs {
		if !ioc.Searchable(ind) {
			continue
		}
		switch ind.Type {
		case ioc.Domain:
			h.addHost(ind.Value)
		case ioc.URL:
			if ind.Detail == "repository" {
				continue // a code host's repository: the host is shared
			}
			host, _ := ioc.HostPath(ind.Value)
			h.addHost(host)
		case ioc.IP:
			h.addIP(ind.Value)
		}
	}
	slices.Sort(h.Domains)
	h.Domains = slices.Compact(h.Domains)
	slices.Sort(h.IPs)
	h.IPs = slices.Compact(h.IPs)
	return h
}

// addHost adds a URL's host (user-info and port dropped; an address goes
// to the addresses) or a domain.
func (h *Hosts) addHost(host string) {
	if i := strings.LastIndexByte(host, '@'); i >= 0 {
		host = host[i+1:]
	}
	if strings.HasPrefix(host, "[") {
		// [v6] or [v6]:port
		if end := strings.IndexByte(host, ']'); end > 0 {
			h.addIP(host[1:end])
		}
		return
	}
	if i := strings.LastIndexByte(host, ':'); i >= 0 {
		host = host[:i]
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if _, err := netip.ParseAddr(host); err == nil {
		h.addIP(host)
		return
	}
	if !IsName(host) || ioc.IsInfrastructure(host) || ioc.IsPublicSuffix(host) || host == "arpa" || strings.HasSuffix(host, ".arpa") {
		// Shared infrastructure, a public suffix (a list of *.co.uk or
		// *.in-addr.arpa would answer NXDOMAIN for every name under it)
		// or the reverse-lookup tree: never a name to block.
		return
	}
	h.Domains = append(h.Domains, host)
}

// addIP adds an address in its canonical form (an IPv4-mapped IPv6
// address as IPv4); a zone, or anything else, is not an address.
func (h *Hosts) addIP(s string) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" || !a.IsValid() {
		return
	}
	a = a.Unmap()
	if !Listable(a) || ioc.IsInfrastructureIP(a.String()) {
		return
	}
	h.IPs = append(h.IPs, a.String())
}

// notGlobal are the special-purpose blocks (IANA's IPv4 and IPv6
// registries) whose addresses are not an attacker's server on the
// internet: this network, shared address space (carrier-grade NAT, and
// Tailscale's 100.100.100.100), benchmarking, the reserved 240/4 with the
// broadcast address, IETF protocol assignments, discard-only, local NAT64,
// IPv6 documentation and segment routing. Loopback, private, link-local
// and multicast addresses are left out by Listable too. The IPv4
// documentation networks (192.0.2/24, 198.51.100/24, 203.0.113/24) stay
// listable: examples and tests use them for attackers' addresses, and
// nothing routes them.
var notGlobal = func() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range []string{
		"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "240.0.0.0/4",
		"::/128", "100::/64", "64:ff9b:1::/48", "2001::/23", "2001:db8::/32", "3fff::/20", "5f00::/16",
	} {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}()

// nat64 is the well-known NAT64 prefix: an address in it is the IPv4
// address in its last 32 bits, judged as that.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Listable says whether an address may be on the block lists: a globally
// reachable unicast address, never the machine's own, a local network's,
// nobody's, or a special-purpose one (notGlobal); a NAT64 address is
// judged by the IPv4 address it carries.
func Listable(a netip.Addr) bool {
	a = a.Unmap()
	if a.Is6() && nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	if a.IsLoopback() || a.IsUnspecified() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsMulticast() || a.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range notGlobal {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// IsName says whether s is a domain name every format can hold: two or
// more labels of letters, digits, '-' and '_' (no label starting or ending
// with '-'), each at most 63 bytes, 253 in all, lower-case, ending in a
// label that is not all digits.
func IsName(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	labels := 0
	for label := range strings.SplitSeq(s, ".") {
		labels++
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	last := s[strings.LastIndexByte(s, '.')+1:]
	return labels >= 2 && strings.Trim(last, "0123456789") != ""
}
