package main

import (
	"bytes"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// taxiiMain pulls a whole TAXII collection the way a TAXII client does:
// GET objects with a limit, then again with the page's next while more is
// true, one request at a time. It prints the objects, pages, seconds and
// objects per second, and the slowest page. With -pages N it stops after
// N pages.
//
// Each page is read into one buffer kept across pages and checked whole as
// JSON (syntax, UTF-8, duplicate names) in one pass that counts the
// objects and takes more and next (readEnvelope): the client shares the
// daemon's cores, and decoding every page with encoding/json cost a fifth
// of the machine in a full pull, more than the STIX exporter.
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
		body           bytes.Buffer
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
		body.Reset()
		_, err = body.ReadFrom(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("page %d: %s: %.200s", pages+1, resp.Status, body.Bytes())
		}
		env, err := readEnvelope(body.Bytes())
		if err != nil {
			return fmt.Errorf("page %d: %w", pages+1, err)
		}
		slowest = max(slowest, time.Since(t0))
		pages++
		objects += env.Objects
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

// envelope is what the pull needs of a TAXII envelope.
type envelope struct {
	More    bool
	Next    string
	Objects int
}

// readEnvelope checks a TAXII envelope whole and counts its objects, each
// of which must be a JSON object.
func readEnvelope(b []byte) (envelope, error) {
	var env envelope
	d := jsontext.NewDecoder(bytes.NewReader(b))
	if tok, err := d.ReadToken(); err != nil {
		return env, err
	} else if tok.Kind() != '{' {
		return env, errors.New("the envelope is not a JSON object")
	}
	for d.PeekKind() != '}' {
		name, err := d.ReadToken()
		if err != nil {
			return env, err
		}
		switch name.String() {
		case "more":
			tok, err := d.ReadToken()
			if err != nil {
				return env, err
			}
			if k := tok.Kind(); k != 't' && k != 'f' {
				return env, errors.New("more is not a boolean")
			}
			env.More = tok.Bool()
		case "next":
			tok, err := d.ReadToken()
			if err != nil {
				return env, err
			}
			if tok.Kind() != '"' {
				return env, errors.New("next is not a string")
			}
			env.Next = tok.String()
		case "objects":
			if tok, err := d.ReadToken(); err != nil {
				return env, err
			} else if tok.Kind() != '[' {
				return env, errors.New("objects is not an array")
			}
			for d.PeekKind() != ']' {
				if d.PeekKind() != '{' {
					if _, err := d.ReadToken(); err != nil {
						return env, err
					}
					return env, fmt.Errorf("object %d is not a JSON object", env.Objects+1)
				}
				if err := d.SkipValue(); err != nil {
					return env, err
				}
				env.Objects++
			}
			if _, err := d.ReadToken(); err != nil {
				return env, err
			}
		default:
			if err := d.SkipValue(); err != nil {
				return env, err
			}
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return env, err
	}
	if _, err := d.ReadToken(); err == nil {
		return env, errors.New("data after the envelope")
	} else if !errors.Is(err, io.EOF) {
		return env, err
	}
	return env, nil
}
