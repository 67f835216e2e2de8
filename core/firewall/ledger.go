package firewall

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"time"
)

// LedgerEntry is one row of the ledger (docs/exposure.md): the artifacts
// of one version served to one token from one client address on one UTC
// day, counted.
type LedgerEntry struct {
	Ecosystem, Name, Version, Purl string
	// User is the token's user's e-mail; TokenID the token's id.
	User, TokenID string
	// ClientIP is as firewall.ledger_ip keeps it: the address, its
	// network (/24, /48), or "".
	ClientIP string
	// Day is the UTC day (midnight) of the row.
	Day         time.Time
	First, Last time.Time
	Count       int64
}

// LedgerStore keeps the ledger.
type LedgerStore interface {
	// RecordLedger adds entries to the ledger in one transaction: an
	// entry whose row exists adds its count and widens first and last.
	RecordLedger(ctx context.Context, es []LedgerEntry) error
	// TrimLedger removes the rows of days before t.Before; returns how many.
	TrimLedger(ctx context.Context, t LedgerTrim) (int64, error)
	// LedgerOf returns up to q.Limit (1..MaxLedgerPage, else ErrInvalid)
	// rows of one package (of one version when q.Version is set), in the
	// order of their key, after q.After.
	LedgerOf(ctx context.Context, q LedgerQuery) ([]LedgerEntry, error)
}

// LedgerQuery asks for the ledger rows of a package (LedgerStore.LedgerOf).
type LedgerQuery struct {
	Ecosystem, Name, Version string
	After                    *LedgerCursor
	Limit                    int
}

// LedgerCursor is where a page of ledger rows ended: its last row's key.
type LedgerCursor struct {
	Version, TokenID, ClientIP string
	Day                        time.Time
}

// Cursor is the position after e.
func (e LedgerEntry) Cursor() *LedgerCursor {
	return &LedgerCursor{Version: e.Version, TokenID: e.TokenID, ClientIP: e.ClientIP, Day: e.Day}
}

// MaxLedgerPage bounds a page of ledger rows.
const MaxLedgerPage = 10_000

// LedgerTrim is what TrimLedger removes.
type LedgerTrim struct{ Before time.Time }

// The ledger's address modes (firewall.ledger_ip).
const (
	LedgerIPFull      = "full"
	LedgerIPTruncated = "truncated"
	LedgerIPNone      = "none"
)

// LedgerIP is the address a ledger row keeps of ip in mode: the address,
// its /24 (IPv4) or /48 (IPv6) network, or nothing.
func LedgerIP(mode, ip string) string {
	switch mode {
	case LedgerIPNone:
		return ""
	case LedgerIPTruncated:
		a := net.ParseIP(ip)
		if a == nil {
			return ""
		}
		if v4 := a.To4(); v4 != nil {
			return (&net.IPNet{IP: v4.Mask(net.CIDRMask(24, 32)), Mask: net.CIDRMask(24, 32)}).String()
		}
		return (&net.IPNet{IP: a.Mask(net.CIDRMask(48, 128)), Mask: net.CIDRMask(48, 128)}).String()
	}
	return ip
}

// ledgerKey is a row of the ledger.
type ledgerKey struct {
	eco, name, version, token, ip string
	day                           int64
}

// The ledger writer's bounds: rows held between writes, and how often it
// writes.
const (
	ledgerMaxPending = 50_000
	ledgerEvery      = time.Second
	ledgerBatch      = 1_000
)

// Ledger counts the artifacts the firewall serves in memory and writes
// the counts every second, a batch of rows at a time: one write a second
// however many requests, never one a request. It trims rows older than
// keep once an hour.
type Ledger struct {
	store  LedgerStore
	log    *slog.Logger
	ipMode string
	keep   time.Duration

	mu      sync.Mutex
	pending map[ledgerKey]*LedgerEntry
	dropped int64 // since the last write, logged there
	full    chan struct{}
	done    chan struct{}
	// Dropped, when set, counts an entry not kept: the writer was behind
	// by ledgerMaxPending rows.
	Dropped func()
}

// NewLedger starts the ledger's writer; it writes what is pending once
// more when ctx ends (Wait waits for that).
func NewLedger(ctx context.Context, store LedgerStore, ipMode string, keep time.Duration, log *slog.Logger) *Ledger {
	l := &Ledger{store: store, log: log, ipMode: ipMode, keep: keep, pending: map[ledgerKey]*LedgerEntry{},
		full: make(chan struct{}, 1), done: make(chan struct{})}
	go l.run(ctx)
	return l
}

// Served counts one artifact served at now.
func (l *Ledger) Served(e LedgerEntry, now time.Time) {
	if l == nil {
		return
	}
	now = now.UTC()
	e.ClientIP = LedgerIP(l.ipMode, e.ClientIP)
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	k := ledgerKey{e.Ecosystem, e.Name, e.Version, e.TokenID, e.ClientIP, day.Unix()}
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.pending[k]; ok {
		p.Count++
		p.Last = now
		return
	}
	if len(l.pending) >= ledgerMaxPending {
		l.dropped++
		if l.Dropped != nil {
			l.Dropped()
		}
		select {
		case l.full <- struct{}{}:
		default:
		}
		return
	}
	e.Day, e.First, e.Last, e.Count = day, now, now, 1
	l.pending[k] = &e
}

func (l *Ledger) run(ctx context.Context) {
	defer close(l.done)
	tick := time.NewTicker(ledgerEvery)
	defer tick.Stop()
	trimmed := time.Time{}
	for {
		select {
		case <-ctx.Done():
			l.flush(context.WithoutCancel(ctx))
			return
		case <-tick.C:
		case <-l.full:
		}
		l.flush(ctx)
		if l.keep > 0 && time.Since(trimmed) > time.Hour {
			trimmed = time.Now()
			if n, err := l.store.TrimLedger(ctx, LedgerTrim{Before: time.Now().Add(-l.keep)}); err != nil {
				l.log.Warn("firewall ledger: trimming failed; will retry", "error", err.Error())
			} else if n > 0 {
				l.log.Info("firewall ledger trimmed", "rows", n)
			}
		}
	}
}

// flush writes what is pending, a batch at a time; a batch that fails is
// kept for the next write.
func (l *Ledger) flush(ctx context.Context) {
	l.mu.Lock()
	pending, dropped := l.pending, l.dropped
	l.pending, l.dropped = map[ledgerKey]*LedgerEntry{}, 0
	l.mu.Unlock()
	if dropped > 0 {
		l.log.Warn("firewall ledger: artifacts served were not counted: the writer was behind", "not_counted", dropped, "rows_waiting", ledgerMaxPending)
	}
	if len(pending) == 0 {
		return
	}
	batch := make([]LedgerEntry, 0, min(len(pending), ledgerBatch))
	write := func() {
		if err := l.store.RecordLedger(ctx, batch); err != nil {
			l.log.Warn("firewall ledger: writing failed; kept for the next write", "rows", len(batch), "error", err.Error())
			for _, e := range batch {
				l.requeue(e)
			}
		}
		batch = batch[:0]
	}
	for _, e := range pending {
		batch = append(batch, *e)
		if len(batch) == ledgerBatch {
			write()
		}
	}
	if len(batch) > 0 {
		write()
	}
}

// requeue puts back an entry a write failed to store, merged with what
// was counted since.
func (l *Ledger) requeue(e LedgerEntry) {
	k := ledgerKey{e.Ecosystem, e.Name, e.Version, e.TokenID, e.ClientIP, e.Day.Unix()}
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.pending[k]
	if !ok {
		l.pending[k] = &e
		return
	}
	p.Count += e.Count
	if e.First.Before(p.First) {
		p.First = e.First
	}
	if e.Last.After(p.Last) {
		p.Last = e.Last
	}
}

// Wait waits for the final write after ctx ended, at most timeout.
func (l *Ledger) Wait(timeout time.Duration) {
	if l == nil {
		return
	}
	select {
	case <-l.done:
	case <-time.After(timeout):
	}
}
