package misp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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
	// Exporters renders the events (the exporter plugin Exporter).
	Exporters core.Exporters
	// Name is the MISP organisation's name; Site the web site's address.
	Name, Site string
	// HashDir, when set, keeps hashes.csv a day at a time in files there,
	// written with the manifest and brought up to date with it, so that a
	// request for hashes.csv reads those files instead of every report.
	HashDir string
	// Community says what the community says of each report (nil: nothing).
	Community core.Communities

	mu       sync.Mutex
	feed     *Feed
	built    bool
	position core.FeedEvent // the last published change the manifest includes
	manifest map[string]ManifestEntry
	// days are the days with an event, for HashDir's files.
	days map[time.Time]bool
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
	f.Community = s.Community
	s.feed = &f
	return f, nil
}

// Manifest returns manifest.json.
func (s *Service) Manifest(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.currentLocked(ctx); err != nil {
		return nil, err
	}
	return json.Marshal(s.manifest)
}

// currentLocked builds the manifest (and the hash files) or brings it up
// to date.
func (s *Service) currentLocked(ctx context.Context) error {
	f, err := s.feedLocked(ctx)
	if err != nil {
		return err
	}
	if s.built {
		return s.catchUp(ctx, f)
	}
	// The position first: a change committed during the pass is read
	// again by the next call, never missed.
	last, err := s.Store.LastFeedEvent(ctx, time.Now().Add(24*time.Hour))
	if err != nil {
		return err
	}
	manifest, days := map[string]ManifestEntry{}, map[time.Time]bool{}
	if s.HashDir != "" {
		// Files of an earlier run may describe days since changed.
		_ = os.RemoveAll(s.HashDir)
		if err := os.MkdirAll(s.HashDir, 0o700); err != nil {
			return fmt.Errorf("misp hashes: %w", err)
		}
	}
	if err := f.Walk(ctx, s.Store, s.Exporters, time.Time{}, time.Time{}, func(e *Event) error {
		m, err := e.Manifest()
		if err != nil {
			return err
		}
		manifest[e.UUID] = m
		days[e.Day] = true
		return s.writeHashes(e.Day, e)
	}); err != nil {
		return err
	}
	s.manifest, s.days, s.position, s.built = manifest, days, last, true
	return nil
}

// hashFile is the file of a day's hashes.
func (s *Service) hashFile(day time.Time) string {
	return filepath.Join(s.HashDir, day.Format("2006-01-02")+".csv")
}

// writeHashes writes the hash lines of a day's event to its file (nil e:
// the day has none any more).
func (s *Service) writeHashes(day time.Time, e *Event) error {
	if s.HashDir == "" {
		return nil
	}
	if e == nil {
		if err := os.Remove(s.hashFile(day)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("misp hashes: %w", err)
		}
		return nil
	}
	tmp, err := os.CreateTemp(s.HashDir, "day-*.tmp")
	if err != nil {
		return fmt.Errorf("misp hashes: %w", err)
	}
	hashes, err := e.Hashes()
	if err != nil {
		tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	bw := bufio.NewWriter(tmp)
	for _, h := range hashes {
		bw.WriteString(h)
		bw.WriteByte('\n')
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("misp hashes: %w", err)
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("misp hashes: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.hashFile(day)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("misp hashes: %w", err)
	}
	return nil
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
		delete(s.days, day)
		var ev *Event
		if err := f.Walk(ctx, s.Store, s.Exporters, day, day.AddDate(0, 0, 1), func(e *Event) error {
			m, err := e.Manifest()
			if err != nil {
				return err
			}
			s.manifest[e.UUID] = m
			s.days[day], ev = true, e
			return nil
		}); err != nil {
			return err
		}
		if err := s.writeHashes(day, ev); err != nil {
			return err
		}
	}
	s.position = pos
	return nil
}

// WriteHashes writes hashes.csv: the MD5 of every attribute value and its
// event's uuid, a day at a time: from HashDir's files when it is set
// (brought up to date first, as the manifest is), else from every report.
func (s *Service) WriteHashes(ctx context.Context, w io.Writer) error {
	if s.HashDir != "" {
		s.mu.Lock()
		if err := s.currentLocked(ctx); err != nil {
			s.mu.Unlock()
			return err
		}
		days := make([]time.Time, 0, len(s.days))
		for d := range s.days {
			days = append(days, d)
		}
		s.mu.Unlock()
		slices.SortFunc(days, func(a, b time.Time) int { return a.Compare(b) })
		for _, day := range days {
			// A day rewritten meanwhile is read whole, old or new (files
			// are replaced by rename); one that went is left out.
			fh, err := os.Open(s.hashFile(day))
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("misp hashes: %w", err)
			}
			_, err = io.Copy(w, fh)
			fh.Close()
			if err != nil {
				return err
			}
		}
		return nil
	}
	f, err := s.Feed(ctx)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	if err := f.Walk(ctx, s.Store, s.Exporters, time.Time{}, time.Time{}, func(e *Event) error {
		hashes, err := e.Hashes()
		for _, h := range hashes {
			bw.WriteString(h)
			bw.WriteByte('\n')
		}
		return err
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
	e, err := f.EventOf(ctx, s.Store, s.Exporters, id)
	if err != nil {
		return nil, err
	}
	return e.File, nil
}
