package storage

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/threatd/threatd/core"
)

func TestZZProfLoad(t *testing.T) {
	p := os.Getenv("ZZ_DB")
	if p == "" {
		t.Skip()
	}
	s, err := Open(SQLite, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	n := 0
	err = s.EachVerifiedSummary(context.Background(), func(b []core.Summary) error { n += len(b); return nil })
	t.Logf("%d summaries in %v, err %v", n, time.Since(at), err)
}

func TestZZProfGet(t *testing.T) {
	p := os.Getenv("ZZ_DB")
	if p == "" {
		t.Skip()
	}
	s, err := Open(SQLite, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var ids []string
	if err := s.db.NewSelect().TableExpr("threats").Column("id").OrderExpr("random()").Limit(20000).Scan(ctx, &ids); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	for _, id := range ids {
		if _, err := s.GetThreats(ctx, []string{id}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d GetThreats(1) in %v: %v each", len(ids), time.Since(at), time.Since(at)/time.Duration(len(ids)))
}
