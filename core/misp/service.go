package misp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/threatd/threatd/core"
)

// Service serves a store's MISP feed. The manifest and hashes.csv cover
// every report, so they are built in one pass and kept until the next
// published change (the feed's last position moves).
type Service struct {
	Store core.Store
	// Name is the MISP organisation's name; Site the web site's address.
	Name, Site string

	mu       sync.Mutex
	feed     *Feed
	seq      int64
	built    bool
	manifest []byte
	hashes   []byte
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
	m, _, err := s.build(ctx)
	return m, err
}

// Hashes returns hashes.csv.
func (s *Service) Hashes(ctx context.Context) ([]byte, error) {
	_, h, err := s.build(ctx)
	return h, err
}

// build renders the manifest and hashes.csv, or returns them as built
// after the last published change.
func (s *Service) build(ctx context.Context) ([]byte, []byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.feedLocked(ctx)
	if err != nil {
		return nil, nil, err
	}
	last, err := s.Store.LastFeedEvent(ctx, time.Now().Add(24*time.Hour))
	if err != nil {
		return nil, nil, err
	}
	if s.built && last.Seq == s.seq {
		return s.manifest, s.hashes, nil
	}
	manifest := map[string]ManifestEntry{}
	var hashes bytes.Buffer
	if err := f.Walk(ctx, s.Store, time.Time{}, time.Time{}, func(e *Event) error {
		manifest[e.UUID] = e.Manifest()
		for _, h := range e.Hashes() {
			hashes.WriteString(h)
			hashes.WriteByte('\n')
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	m, err := json.Marshal(manifest)
	if err != nil {
		return nil, nil, err
	}
	s.manifest, s.hashes, s.seq, s.built = m, hashes.Bytes(), last.Seq, true
	return s.manifest, s.hashes, nil
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

// WriteDir writes the whole feed into dir: one {uuid}.json per event, then
// hashes.csv and manifest.json, each through a temporary file renamed into
// place (a MISP reading the folder meanwhile sees old or new files, never
// half-written ones). It returns the events and reports written.
func (s *Service) WriteDir(ctx context.Context, dir string) (events, reports int, err error) {
	f, err := s.Feed(ctx)
	if err != nil {
		return 0, 0, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, err
	}
	manifest := map[string]ManifestEntry{}
	var hashes bytes.Buffer
	err = f.Walk(ctx, s.Store, time.Time{}, time.Time{}, func(e *Event) error {
		b, err := json.Marshal(File{Event: *e})
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dir, e.UUID+".json"), b); err != nil {
			return err
		}
		manifest[e.UUID] = e.Manifest()
		for _, h := range e.Hashes() {
			hashes.WriteString(h)
			hashes.WriteByte('\n')
		}
		events++
		reports += e.Reports()
		return nil
	})
	if err != nil {
		return events, reports, err
	}
	if err := writeFile(filepath.Join(dir, "hashes.csv"), hashes.Bytes()); err != nil {
		return events, reports, err
	}
	m, err := json.Marshal(manifest)
	if err != nil {
		return events, reports, err
	}
	return events, reports, writeFile(filepath.Join(dir, "manifest.json"), m)
}

func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".misp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
