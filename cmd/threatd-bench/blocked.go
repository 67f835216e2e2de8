package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// blockedMain sends GET -url at -rate requests a second for -duration
// (an open loop: a request is sent on its tick whether or not the ones
// before it were answered, up to -workers at once), and prints how many
// were sent and what was answered: the firewall's "2,000 blocked
// requests a second, every one recorded" run. With -body it POSTs the
// body instead, each %d in it replaced by an even number below -n (the
// benchmark's reports: POST /sightings at a rate).
func blockedMain(args []string) error {
	fs := flag.NewFlagSet("blocked", flag.ExitOnError)
	target := fs.String("url", "", "the URL to request")
	token := fs.String("token", "", "the API token")
	rate := fs.Int("rate", 2000, "requests a second")
	duration := fs.Duration("duration", 60*time.Second, "how long")
	workers := fs.Int("workers", 64, "requests in flight at most")
	body := fs.String("body", "", "a JSON body to POST (each %d: an even number below -n)")
	n := fs.Int("n", 1000000, "the range of %d in -body")
	_ = fs.Parse(args)
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: *workers, MaxConnsPerHost: *workers} //nolint:gosec // a benchmark against the local self-signed daemon
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var sent, late atomic.Int64
	var mu sync.Mutex
	codes := map[int]int64{}
	jobs := make(chan struct{}, *workers)
	var wg sync.WaitGroup
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				req, _ := http.NewRequest(http.MethodGet, *target, nil)
				if *body != "" {
					i := rand.IntN(max(*n/2, 1)) * 2
					req, _ = http.NewRequest(http.MethodPost, *target, strings.NewReader(strings.ReplaceAll(*body, "%d", fmt.Sprintf("%07d", i))))
				}
				req.Header.Set("Authorization", "Bearer "+*token)
				code := 0
				if res, err := client.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					code = res.StatusCode
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	interval := time.Second / time.Duration(*rate)
	total := int64(duration.Seconds() * float64(*rate))
	for i := int64(0); i < total; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		select {
		case jobs <- struct{}{}:
		default:
			late.Add(1) // every worker busy: sent once one is free
			jobs <- struct{}{}
		}
		sent.Add(1)
	}
	close(jobs)
	wg.Wait()
	took := time.Since(start)
	fmt.Printf("sent %d in %.1f s (%.0f/s), %d waited for a free worker; answers:", sent.Load(), took.Seconds(), float64(sent.Load())/took.Seconds(), late.Load())
	for code, n := range codes {
		fmt.Printf(" %d×%d", n, code)
	}
	fmt.Println()
	return nil
}
