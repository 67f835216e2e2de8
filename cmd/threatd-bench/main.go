// Command threatd-bench holds the helpers of `make bench-scale`
// (bench-scale.sh beside it; docs/performance.md):
//
//	threatd-bench gen -n N -o FILE       write the synthetic OSV archive
//	threatd-bench trivial -listen ADDR   serve a constant JSON body over TLS
//	threatd-bench rss -dir D -out FILE   peak RSS of the processes run from D
//	threatd-bench upstream -dir D        an npm upstream for the firewall's runs
//	threatd-bench taxii-pull -url U      pull a TAXII collection by next, timed
//	threatd-bench blocked -url U         GET U at a fixed rate (the firewall's decisions)
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: threatd-bench gen|trivial|rss|upstream|taxii-pull|blocked [flags]")
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "gen":
		fs := flag.NewFlagSet("gen", flag.ExitOnError)
		n := fs.Int("n", 1_000_000, "number of records")
		out := fs.String("o", "bench-osv.zip", "archive to write")
		_ = fs.Parse(args)
		err = generate(*out, *n)
	case "trivial":
		err = trivialMain(args)
	case "rss":
		err = rssMain(args)
	case "upstream":
		err = upstreamMain(args)
	case "taxii-pull":
		err = taxiiMain(args)
	case "blocked":
		err = blockedMain(args)
	default:
		err = fmt.Errorf("unknown command %q (gen, trivial, rss, upstream, taxii-pull, blocked)", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "threatd-bench:", err)
		os.Exit(1)
	}
}
