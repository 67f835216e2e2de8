package main_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/threatd/threatd/cmd/internal/apitest"
)

// taxiiClient is a TAXII 2.1 client as a TIP runs one: it follows
// discovery to the API root and a collection, and polls it with next or
// with added_after from X-TAXII-Date-Added-Last.
type taxiiClient struct {
	t     *testing.T
	d     *daemon
	auth  string // the Authorization header
	calls int
}

type taxiiAnswer struct {
	code int
	hdr  http.Header
	body map[string]any
	raw  []byte
}

func (c *taxiiClient) get(path string, headers ...string) taxiiAnswer {
	c.t.Helper()
	return c.send("GET", path, headers...)
}

func (c *taxiiClient) send(method, path string, headers ...string) taxiiAnswer {
	c.t.Helper()
	c.calls++
	req, err := http.NewRequest(method, c.d.base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Accept", taxiiAccept)
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := c.d.client.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		// A body shorter than its Content-Length ends in an error here.
		c.t.Fatalf("%s %s: %d, reading the body: %v", method, path, res.StatusCode, err)
	}
	apitest.Check(c.t, req, nil, res, b)
	a := taxiiAnswer{code: res.StatusCode, hdr: res.Header, raw: b}
	if ct := res.Header.Get("Content-Type"); ct != taxiiAccept {
		c.t.Fatalf("%s %s: %d Content-Type %q, want %q: %s", method, path, res.StatusCode, ct, taxiiAccept, b)
	}
	if err := json.Unmarshal(b, &a.body); err != nil {
		c.t.Fatalf("%s %s: %d not a JSON object: %s", method, path, res.StatusCode, b)
	}
	if res.StatusCode >= 400 {
		// A TAXII error message: title and http_status.
		if a.body["title"] == nil || a.body["http_status"] != fmt.Sprint(res.StatusCode) {
			c.t.Fatalf("%s %s: %d is not a TAXII error message: %s", method, path, res.StatusCode, b)
		}
	}
	return a
}

func (a taxiiAnswer) expect(t *testing.T, code int) taxiiAnswer {
	t.Helper()
	if a.code != code {
		t.Fatalf("status %d %s, want %d", a.code, a.raw, code)
	}
	return a
}

// seenObject is an object version as a poller saw it.
type seenObject struct {
	id, version string
	added       time.Time
	obj         map[string]any
}

// poll reads a collection's objects from after (zero: the start) to the
// end, by next (byNext) or by added_after, limit at a time; it returns the
// objects in order and the last date added seen (X-TAXII-Date-Added-Last),
// where the next poll starts.
func (c *taxiiClient) poll(col string, after time.Time, limit int, byNext bool, extra string) ([]seenObject, time.Time) {
	c.t.Helper()
	var out []seenObject
	next := ""
	lastSeen := after
	for range 10_000 {
		q := url.Values{"limit": {fmt.Sprint(limit)}}
		if next != "" {
			q.Set("next", next)
		}
		// By next: the original query and next; by added_after: the last
		// date added seen.
		if !after.IsZero() {
			q.Set("added_after", after.Format(time.RFC3339Nano))
		}
		path := "/taxii2/api/collections/" + col + "/objects/?" + q.Encode() + extra
		a := c.get(path).expect(c.t, 200)
		objs, _ := a.body["objects"].([]any)
		if len(objs) > limit {
			c.t.Fatalf("%s: %d objects for limit %d", path, len(objs), limit)
		}
		if len(objs) > 0 {
			first, err1 := time.Parse(time.RFC3339Nano, a.hdr.Get("X-TAXII-Date-Added-First"))
			last, err2 := time.Parse(time.RFC3339Nano, a.hdr.Get("X-TAXII-Date-Added-Last"))
			if err1 != nil || err2 != nil || last.Before(first) || (!after.IsZero() && !first.After(after)) {
				c.t.Fatalf("%s: date added headers %q %q after %v", path, a.hdr.Get("X-TAXII-Date-Added-First"), a.hdr.Get("X-TAXII-Date-Added-Last"), after)
			}
			for _, o := range objs {
				m := o.(map[string]any)
				v, _ := m["modified"].(string)
				if v == "" {
					v = m["created"].(string)
				}
				out = append(out, seenObject{id: m["id"].(string), version: v, added: last, obj: m})
			}
			lastSeen = last
			if !byNext {
				after = last
			}
		}
		more, _ := a.body["more"].(bool)
		n, _ := a.body["next"].(string)
		if !more {
			if n != "" {
				c.t.Fatalf("%s: next %q without more", path, n)
			}
			return out, lastSeen
		}
		if byNext {
			if n == "" {
				c.t.Fatalf("%s: more without next", path)
			}
			next = n
		} else if len(objs) == 0 {
			c.t.Fatalf("%s: more but no objects and paging by added_after", path)
		}
	}
	c.t.Fatal("polling did not end")
	return nil, lastSeen
}

func basicAuth(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}
