package cache

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/threatd/threatd/core/webhooks"
)

// Origin is a scheme, host and port the firewall may fetch from, with
// whether a host name of it may resolve to private addresses.
type Origin struct {
	// URL is any URL on the origin (an upstream's, a file host's).
	URL string
	// Private lets a host name resolve to private, loopback and link-local
	// addresses (a private upstream, or firewall.allow_private).
	Private bool
}

// OriginOf is the origin of u: scheme://host:port, lower-cased, with the
// scheme's default port written out.
func OriginOf(u *url.URL) string {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(host, port)
}

// Origins is a set of origins (OriginOf's form).
type Origins map[string]bool

// Allows says whether raw is an http(s) URL on one of the origins.
func (o Origins) Allows(raw string) bool {
	target, _, _ := SplitRequest(raw)
	u, err := url.Parse(target)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && o[OriginOf(u)]
}

// ErrNotAllowed wraps a fetch or redirect to a host the firewall does not
// fetch from.
var ErrNotAllowed = errors.New("not a host the firewall fetches from")

type originsKey struct{}

// WithOrigins returns ctx carrying the origins a fetch (and the redirects
// it follows) may reach.
func WithOrigins(ctx context.Context, o Origins) context.Context {
	return context.WithValue(ctx, originsKey{}, o)
}

// NewClient returns the firewall's HTTP client: it follows at most 5
// redirects, each only to an origin the request's context allows
// (WithOrigins); it connects only to the hosts of origins (and to the
// proxy the environment names for them), and a host name that is not
// Private must resolve to public addresses (webhooks.CheckWebhookAddr, the
// webhook dialer's checks), so that a poisoned name cannot reach the
// daemon's own network. A host given as an IP address is dialled as given.
func NewClient(origins []Origin, allowPrivate bool) (*http.Client, error) {
	type hostRule struct{ private, literal bool }
	hosts := map[string]hostRule{}
	for _, o := range origins {
		u, err := url.Parse(o.URL)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("upstream %q is not a URL", o.URL)
		}
		hp := strings.TrimPrefix(OriginOf(u), strings.ToLower(u.Scheme)+"://")
		r := hosts[hp]
		_, ipErr := netip.ParseAddr(strings.Trim(u.Hostname(), "[]"))
		r.literal = r.literal || ipErr == nil
		r.private = r.private || o.Private || allowPrivate
		hosts[hp] = r
		// The proxy the environment names for this origin, if any, is
		// dialled too (an operator's choice).
		if p, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err == nil && p != nil {
			hosts[strings.TrimPrefix(OriginOf(p), strings.ToLower(p.Scheme)+"://")] = hostRule{private: true, literal: true}
		}
	}
	base := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		r, ok := hosts[net.JoinHostPort(strings.ToLower(host), port)]
		if !ok {
			return nil, fmt.Errorf("%s: %w", addr, ErrNotAllowed)
		}
		if r.literal || r.private {
			return base.DialContext(ctx, network, addr)
		}
		d := *base
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return err
			}
			if err := webhooks.CheckWebhookAddr(ap.Addr(), false); err != nil {
				return fmt.Errorf("%s resolves to %s: refused (set firewall.allow_private for an upstream on a private network)", host, ap.Addr())
			}
			return nil
		}
		return d.DialContext(ctx, network, addr)
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           dial,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 30 * time.Second,
			MaxIdleConnsPerHost:   64,
			IdleConnTimeout:       90 * time.Second,
			ForceAttemptHTTP2:     true,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return fmt.Errorf("more than 5 redirects")
			}
			o, _ := req.Context().Value(originsKey{}).(Origins)
			if !o.Allows(req.URL.String()) {
				return fmt.Errorf("a redirect to %s: %w", OriginOf(req.URL), ErrNotAllowed)
			}
			return nil
		},
	}, nil
}
