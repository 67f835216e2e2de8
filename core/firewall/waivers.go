package firewall

import (
	"context"
	"fmt"
	"time"

	"github.com/threatd/threatd/core"
)

// WaiverJSON is a waiver as the API and the CLI show it.
type WaiverJSON struct {
	WaiverID  string `json:"waiver_id"`
	Ecosystem string `json:"ecosystem"`
	Name      string `json:"name"`
	Version   string `json:"version"`
	Rule      string `json:"rule"`
	Reason    string `json:"reason"`
	CreatedBy string `json:"created_by"`
	CreatedAt string `json:"created_at"`
	Until     string `json:"until"`
}

// ShowWaiver is w as WaiverJSON.
func ShowWaiver(w Waiver) WaiverJSON {
	return WaiverJSON{WaiverID: w.ID, Ecosystem: w.Ecosystem, Name: w.Name, Version: w.Version, Rule: w.Rule, Reason: w.Reason,
		CreatedBy: w.CreatedBy, CreatedAt: w.CreatedAt.UTC().Format(time.RFC3339), Until: w.Until.UTC().Format(time.RFC3339)}
}

// WaiverService is the waivers' use case, called by the CLI, the API and
// the web site: made (validated, then stored), listed, removed.
type WaiverService struct {
	Store FirewallStore
	// Cache, when set, is refreshed after a change made here.
	Cache *WaiverCache
	// ReviewerMax is the longest waiver a reviewer may make
	// (firewall.reviewer_waiver_max); a longer one, or one of a wide name
	// glob (Waiver.Wide), needs an administrator.
	ReviewerMax time.Duration
}

// Waive makes a waiver for createdBy (the e-mail of who asks), whose role
// is role: a reviewer may lift a rule for one package for up to
// ReviewerMax; a wider waiver is an administrator's.
func (s WaiverService) Waive(ctx context.Context, r WaiverRequest, createdBy string, role core.Role) (Waiver, error) {
	w, err := NewWaiver(r, createdBy, time.Now())
	if err != nil {
		return Waiver{}, err
	}
	if role != core.RoleAdmin {
		if why := w.Wide(s.ReviewerMax); why != "" {
			return Waiver{}, fmt.Errorf("%w: a waiver %s needs an administrator (a reviewer may waive for at most %s: firewall.reviewer_waiver_max, and a glob naming at least %d letters or digits)", core.ErrForbidden, why, ForText(s.ReviewerMax), MinGlobLetters)
		}
	}
	if err := s.Store.CreateWaiver(ctx, w); err != nil {
		return Waiver{}, err
	}
	s.refresh(ctx)
	return w, nil
}

// InForce lists the waivers in force, newest first.
func (s WaiverService) InForce(ctx context.Context) ([]Waiver, error) {
	return s.Store.ListWaivers(ctx, time.Now())
}

// Remove ends a waiver now.
func (s WaiverService) Remove(ctx context.Context, id string) error {
	if err := s.Store.DeleteWaiver(ctx, id); err != nil {
		return err
	}
	s.refresh(ctx)
	return nil
}

func (s WaiverService) refresh(ctx context.Context) {
	if s.Cache != nil {
		s.Cache.Refresh(ctx)
	}
}

// HeldJSON is a held version as the API and the CLI show it.
type HeldJSON struct {
	Ecosystem string  `json:"ecosystem"`
	Name      string  `json:"name"`
	Version   string  `json:"version"`
	Published *string `json:"published"`
	FirstSeen string  `json:"first_seen"`
	Until     string  `json:"until"`
}

// ShowHeld is h as HeldJSON.
func ShowHeld(h HeldVersion) HeldJSON {
	out := HeldJSON{Ecosystem: h.Ecosystem, Name: h.Name, Version: h.Version, FirstSeen: h.FirstSeen.UTC().Format(time.RFC3339), Until: h.Until.UTC().Format(time.RFC3339)}
	if !h.Published.IsZero() {
		p := h.Published.UTC().Format(time.RFC3339)
		out.Published = &p
	}
	return out
}
