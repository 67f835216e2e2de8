package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTable: the committed table parses, and a table with a mistake is
// refused with the line it is on.
func TestTable(t *testing.T) {
	fields, err := parse("../../../core/fields.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(fields) < 17 || fields[0].Name != "report_type" {
		t.Fatalf("parsed %d fields, first %+v", len(fields), fields[0])
	}
	good := `publisher  Publisher  text  1  -  "Publisher"`
	for _, tc := range []struct{ table, want string }{
		{good + "\n" + `tags Tags list 1 - "Tags"`, "record place"},
		{good + "\n" + `tags Tags set 2 - "Tags"`, `unknown kind "set"`},
		{good + "\n" + `publisher Publisher2 text 2 - "P"`, "given twice"},
		{good + "\n" + `level Level severity 2 - "Level"`, "needs a rule"},
		{good + "\n" + `tags Tags list 3 - "Tags"`, "2 is missing"},
		{good + "\n" + `tags Tags list 2 secret "Tags"`, `unknown flag "secret"`},
		{good + "\n" + `tags Tags list 2 -`, "want: name go kind"},
		{good + "\n" + `tags Tags list 2 5 - "Tags"`, "want: name go kind"},
		{`registry Registry text 1 identity "Registry"`, "identity field"},
	} {
		path := filepath.Join(t.TempDir(), "fields.txt")
		if err := os.WriteFile(path, []byte(tc.table), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := parse(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.table, err, tc.want)
		}
	}
}
