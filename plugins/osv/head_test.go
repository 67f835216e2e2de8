package osv

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/threatd/threatd/core/coretest"
)

var headSeeds = []string{
	`{"id":"MAL-1","modified":"2024-01-02T03:04:05Z","affected":[{"package":{"ecosystem":"npm","name":"a"},"ranges":[]}],"details":"x"}`,
	`{"ID":"MAL-1","id":"MAL-2","modified":"m","affected":[]}`,
	`{"id":"MAL-1","id":"MAL-2"}`,
	`{"id":null,"modified":5,"affected":null}`,
	`{"affected":[null,{"package":null},{"Package":{"name":"x"}},{"package":{"NAME":"y","name":"z"}}]}`,
	`{"id":"\u004dAL-\ud83d\ude00","modified":"x"} `,
	`{"id":"a"} {}`,
	"{\"id\":\"\xff\"}",
	`{"affected":[{"package":{"ecosystem":"PyPI","name":"p","purl":"pkg:pypi/p"}}],"database_specific":{"id":"no"}}`,
	`{"id":"x","affected":[{"package":{"ecosystem":"npm","name":"a"}}],"aff\u212Acted":[]}`,
	`[]`, `"x"`, ``, `{`,
}

// checkHead fails when scanHead reads data otherwise than json.Unmarshal.
func checkHead(t *testing.T, data []byte) {
	t.Helper()
	h, ok := scanHead(data)
	if !ok {
		return
	}
	var want head
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatalf("scanHead read %q, which json.Unmarshal refuses: %v", data, err)
	}
	if !reflect.DeepEqual(h, want) && !(len(h.Affected) == 0 && len(want.Affected) == 0 && h.ID == want.ID && h.Modified == want.Modified) {
		t.Fatalf("scanHead(%q) = %+v, json.Unmarshal %+v", data, h, want)
	}
}

// TestScanHead: on the seeds, scanHead reads what json.Unmarshal does.
func TestScanHead(t *testing.T) {
	t.Parallel()
	for _, s := range headSeeds {
		checkHead(t, []byte(s))
	}
}

// TestScanHeadRealRecords: scanHead reads every real sample record itself,
// as json.Unmarshal does.
func TestScanHeadRealRecords(t *testing.T) {
	t.Parallel()
	dir := coretest.Reference(t, "osv-malicious-sample")
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	if err != nil || len(files) < 300 {
		t.Fatalf("%d sample records (%v)", len(files), err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := scanHead(data); !ok {
			t.Fatalf("%s: scanHead leaves a real record to json.Unmarshal", f)
		}
		checkHead(t, data)
	}
}

func FuzzScanHead(f *testing.F) {
	for _, s := range headSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkHead(t, data) })
}
