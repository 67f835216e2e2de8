package main_test

import (
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/threatd/threatd/cmd/internal/apitest"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/storage/pgtest"
)

var copiedTables = []string{"users", "api_tokens", "threats", "threat_details", "threat_revisions", "review_events", "changes", "reputation_events"}

func TestCopyStorageSQLiteToPostgres(t *testing.T) {
	t.Parallel()
	in := newInstance(t, quiet+"  new_user_max_unverified: 0\n")
	tok := in.user("c@example.com", "--name", "Copier")
	other := in.user("o@example.com")
	d := in.serve()
	verified := d.submit(tok, `{"report_type":"package","resource_identifier":"copy-me","registry":"npm","threat_description":"x","tags":["a","b"],"payload_description":"## md\n\nhxxps://e[.]example","version_info":"1.0.0","download_count":7}`)
	d.submit(tok, `{"report_type":"url","resource_identifier":"https://pending.example/x","threat_description":"still pending"}`)
	in.mustCLI("review", "verify", verified)
	d.do("PUT", base+"/modify-threat-report", other, fmt.Sprintf(`{"threat_id":%q,"publisher":"mallory"}`, verified)).expect(t, 200, "")
	q := checkPath("purl", "pkg:npm/copy-me@1.0.0")
	var before response
	// Verified, and its submitter's record counted in its confidence.
	confidence := float64(core.Confidence(core.ConfidenceInput{Record: core.SubmitterRecord{Verified: 1}.Score()}))
	apitest.Eventually(t, "verified", 10*time.Second, func() bool {
		before = d.do("GET", q, tok, "")
		det, _ := before.body["details"].(map[string]any)
		return before.body["malicious"] == true && det["confidence"] == confidence
	})
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}

	dsn := pgtest.Server(t).Database(t, t.Name())
	out := in.mustCLI("copy-storage", "--to-plugin", "postgres", "--to-dsn", dsn)
	src := sqliteDB(t, in)
	dst := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dsn)))
	defer dst.Close()
	for _, table := range copiedTables {
		n, m := count(t, src, "SELECT count(*) FROM "+table), count(t, dst, "SELECT count(*) FROM "+table)
		if n == 0 || n != m {
			t.Fatalf("%s: %d rows in SQLite, %d in PostgreSQL", table, n, m)
		}
		if !strings.Contains(out, fmt.Sprintf("%-17s %d", table, n)) {
			t.Fatalf("copy-storage output lacks %s %d:\n%s", table, n, out)
		}
	}

	// The same instance on PostgreSQL answers the same, with the same token.
	in.env = []string{"THREATD_STORAGE__PLUGIN=postgres", "THREATD_STORAGE__DSN=" + dsn}
	pg := in.serve()
	after := pg.do("GET", q, tok, "").expect(t, 200, "")
	if !reflect.DeepEqual(before.body, after.body) {
		t.Fatalf("check differs after the copy:\n before %v\n after  %v", before.body, after.body)
	}
	if !strings.Contains(in.mustCLI("review", "list"), "pending.example") || !strings.Contains(in.mustCLI("review", "list"), "publisher:") {
		t.Fatal("pending report or revision lost in the copy")
	}
	// The feed continues after the copied sequence numbers.
	id := pg.submit(tok, `{"report_type":"ip","resource_identifier":"192.0.2.200","threat_description":"after the copy"}`)
	in.mustCLI("review", "verify", id)
	eventually(t, "new verification on the copied database", func() bool {
		return pg.do("GET", checkPath("report_type", "ip", "resource_identifier", "192.0.2.200"), tok, "").body["malicious"] == true
	})

	// A second copy into a non-empty target is refused and changes nothing.
	in.env = nil
	r := in.cli("copy-storage", "--to-plugin", "postgres", "--to-dsn", dsn)
	if r.code == 0 || !strings.Contains(r.stderr, "not empty") {
		t.Fatalf("copy into a non-empty target: %+v", r)
	}
}
