package taxii

import (
	"strings"
	"testing"
	"time"
)

func TestReadDocument(t *testing.T) {
	at := []time.Time{time.Date(2026, 5, 1, 10, 0, 0, 123456000, time.UTC), time.Date(2026, 5, 1, 10, 0, 0, 123457000, time.UTC)}
	added := func(i int) time.Time { return at[i] }
	malware := `{"type":"malware","id":"malware--1","spec_version":"2.1","created":"2026-05-01T10:00:00.000Z","modified":"2026-05-02T10:00:00.000Z","name":"x {\"y\"}","labels":["a","b"],"extensions":{"e":{"id":"not the head"}}}`
	// Names with escapes are the same names.
	indicator := `{"\u0069d":"indicator--2","typ\u0065":"indicator","created":"2026-05-01T10:00:00.000Z","pattern":"[url:value = 'x']"}`
	doc := "{\n \"shared\": [ {\"type\":\"identity\",\"id\":\"identity--s\",\"created\":\"2026-01-01T00:00:00.000Z\"} ],\n" +
		" \"records\": [\n  [ " + malware + " ,\n\t" + indicator + "],\n  []\n ]\n}\n"
	shared, records, err := readDocument([]byte(doc), 2, added)
	if err != nil {
		t.Fatal(err)
	}
	if len(shared) != 1 || shared[0].ID != "identity--s" || !shared[0].DateAdded.Equal(SharedAdded) || shared[0].Version != "2026-01-01T00:00:00.000Z" {
		t.Fatalf("shared: %+v", shared)
	}
	if len(records) != 2 || len(records[0]) != 2 || len(records[1]) != 0 {
		t.Fatalf("records: %+v", records)
	}
	m, i := records[0][0], records[0][1]
	if m.ID != "malware--1" || m.Type != "malware" || m.SpecVersion != "2.1" || m.Version != "2026-05-02T10:00:00.000Z" || string(m.JSON) != malware {
		t.Fatalf("malware: %+v %s", m, m.JSON)
	}
	if i.ID != "indicator--2" || i.Type != "indicator" || i.Version != "2026-05-01T10:00:00.000Z" || string(i.JSON) != indicator {
		t.Fatalf("indicator: %+v %s", i, i.JSON)
	}
	if !m.DateAdded.Equal(at[0]) || !i.DateAdded.Equal(at[0].Add(1)) {
		t.Fatalf("date_added %v %v", m.DateAdded, i.DateAdded)
	}

	for name, bad := range map[string]string{
		"too few records":     `{"shared":[],"records":[[]]}`,
		"too many records":    `{"shared":[],"records":[[],[],[]]}`,
		"no records":          `{"shared":[]}`,
		"not JSON":            `{"shared":[],"records":[[],[]]`,
		"data after it":       `{"shared":[],"records":[[],[]]} {}`,
		"duplicate name":      `{"shared":[],"records":[[{"id":"a","id":"b"}],[]]}`,
		"duplicate, escaped":  `{"shared":[],"records":[[{"id":"a","\u0069d":"b"}],[]]}`,
		"invalid UTF-8":       "{\"shared\":[],\"records\":[[{\"id\":\"a\xff\"}],[]]}",
		"id not a string":     `{"shared":[],"records":[[{"id":1}],[]]}`,
		"a record not a list": `{"shared":[],"records":[{},[]]}`,
		"an object not one":   `{"shared":[],"records":[["x"],[]]}`,
	} {
		if _, _, err := readDocument([]byte(bad), 2, added); err == nil {
			t.Errorf("%s: %s read without error", name, strings.ReplaceAll(bad, "\xff", `\xff`))
		}
	}
}
