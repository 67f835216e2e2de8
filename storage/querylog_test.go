package storage

import (
	"context"
	"strings"
	"sync"

	"github.com/uptrace/bun"
)

// queryLog records the statements a store runs (a bun query hook).
type queryLog struct {
	mu      sync.Mutex
	queries []string
}

func (l *queryLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }
func (l *queryLog) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	if strings.HasPrefix(e.Query, "PRAGMA wal_checkpoint") {
		return // the background checkpoints (checkpointLoop), not the statement under test
	}
	l.mu.Lock()
	l.queries = append(l.queries, e.Query)
	l.mu.Unlock()
}

func (l *queryLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queries
	l.queries = nil
	return q
}
