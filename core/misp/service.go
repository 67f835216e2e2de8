package misp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/threatd/threatd/core"
)

// Service serves a store's MISP feed. The manifest (one small entry per
// day) is kept in memory: built once by a pass over every report, then
// brought up to date by re-reading only the days of the reports published
// changes touched since. hashes.csv and the event files are rendered as
// they are asked for, one day in memory at a time.
type Service struct {
	Store core.Store
	// Name is the MISP organisation's name; Site the web site's address.
	Name, Site string

	mu       sync.Mutex
	feed     *Feed
	built    bool
	position core.FeedEvent // the last published change the manifest includes
	manifest map[string]ManifestEntry
}

// Feed returns the feed, its organisation made from the service secret
// "misp" (the same for every daemon on the database).
func (s *Service) Feed(ctx context.Context) (Feed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.feedLocked(ctx)
}

func (s *Service) feedLocked(ctx context.Context) (Feed, error) {
	if s.feed != nil {
		return *s.feed, nil
	}
	secret, err := s.Store.Secret(ctx, "misp")
	if err != nil {
		return Feed{}, fmt.Errorf("misp feed secret: %w", err)
	}
	f := NewFeed(s.Name, secret, s.Site)
	s.feed = &f
	return f, nil
}

// Manifest returns manifest.json.
func (s *Service) Manifest(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.feedLocked(ctx)
	if err != nil {
		return nil, err
	}
	if !s.built {
		// The position first: a change committed during the pass is read
		// again by the next call, never missed.
		last, err := s.Store.LastFeedEvent(ctx, time.Now().Add(24*time.Hour))
		if err != nil {
			return nil, err
		}
		manifest := map[string]ManifestEntry{}
		if err := f.Walk(ctx, s.Store, time.Time{}, time.Time{}, func(e *Event) error {
			manifest[e.UUID] = e.Manifest()
			return nil
		}); err != nil {
			return nil, err
		}
		s.manifest, s.position, s.built = manifest, last, true
	} else if err := s.catchUp(ctx, f); err != nil {
		return nil, err
	}
	return json.Marshal(s.manifest)
}

// catchUp re-reads the days of the reports changed since the manifest's
// position.
func (s *Service) catchUp(ctx context.Context, f Feed) error {
	days := map[time.Time]bool{}
	pos := s.position
	for {
		page, err := s.Store.Feed(ctx, core.FeedQuery{AfterAt: pos.At, AfterSeq: pos.Seq, Limit: pageSize})
		if err != nil {
			return err
		}
		for _, it := range page {
			if d := Day(it.Threat); !d.IsZero() {
				days[d] = true
			}
			pos = it.Event
		}
		if len(page) < pageSize {
			break
		}
	}
	for day := range days {
		id := f.EventUUID(day)
		delete(s.manifest, id)
		if err := f.Walk(ctx, s.Store, day, day.AddDate(0, 0, 1), func(e *Event) error {
			s.manifest[e.UUID] = e.Manifest()
			return nil
		}); err != nil {
			return err
		}
	}
	s.position = pos
	return nil
}

// WriteHashes writes hashes.csv: the MD5 of every attribute value and its
// event's uuid, a day at a time.
func (s *Service) WriteHashes(ctx context.Context, w io.Writer) error {
	f, err := s.Feed(ctx)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	if err := f.Walk(ctx, s.Store, time.Time{}, time.Time{}, func(e *Event) error {
		for _, h := range e.Hashes() {
			bw.WriteString(h)
			bw.WriteByte('\n')
		}
		return nil
	}); err != nil {
		return err
	}
	return bw.Flush()
}

// Event returns the file {id}.json.
func (s *Service) Event(ctx context.Context, id string) ([]byte, error) {
	f, err := s.Feed(ctx)
	if err != nil {
		return nil, err
	}
	e, err := f.EventOf(ctx, s.Store, id)
	if err != nil {
		return nil, err
	}
	return json.Marshal(File{Event: *e})
}
