package main

import (
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"
)

// taxiiMain pulls a whole TAXII collection the way a TAXII client does:
// GET objects with a limit, then again with the page's next while more is
// true, one request at a time. It prints the objects, pages, seconds and
// objects per second, and the slowest page. With -pages N it stops after
// N pages.
func taxiiMain(args []string) error {
	fs := flag.NewFlagSet("taxii-pull", flag.ExitOnError)
	base := fs.String("url", "https://127.0.0.1:18443", "the daemon's address")
	collection := fs.String("collection", "threats", "collection id")
	limit := fs.Int("limit", 1000, "objects a page")
	addedAfter := fs.String("added-after", "", "start after this date_added (empty = the whole collection)")
	maxPages := fs.Int("pages", 0, "stop after this many pages (0 = the whole collection)")
	_ = fs.Parse(args)
	token := os.Getenv("BENCH_TOKEN")
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // a local benchmark against a self-signed certificate
	var (
		objects, pages int
		slowest        time.Duration
		next           string
	)
	start := time.Now()
	for {
		q := url.Values{"limit": {fmt.Sprint(*limit)}}
		if *addedAfter != "" {
			q.Set("added_after", *addedAfter)
		}
		if next != "" {
			q.Set("next", next)
		}
		req, err := http.NewRequest(http.MethodGet, *base+"/taxii2/api/collections/"+*collection+"/objects/?"+q.Encode(), nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept", "application/taxii+json;version=2.1")
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("page %d: %s: %.200s", pages+1, resp.Status, body)
		}
		var env struct {
			More    bool              `json:"more"`
			Next    string            `json:"next"`
			Objects []json.RawMessage `json:"objects"`
		}
		if err := json.Unmarshal(body, &env); err != nil {
			return fmt.Errorf("page %d: %w", pages+1, err)
		}
		slowest = max(slowest, time.Since(t0))
		pages++
		objects += len(env.Objects)
		if !env.More || pages == *maxPages {
			break
		}
		if env.Next == "" {
			return fmt.Errorf("page %d: more is true but there is no next", pages)
		}
		next = env.Next
	}
	secs := time.Since(start).Seconds()
	fmt.Printf("objects %d pages %d seconds %.1f objects/s %.0f slowest-page-ms %.0f\n", objects, pages, secs, float64(objects)/secs, float64(slowest.Milliseconds()))
	return nil
}
