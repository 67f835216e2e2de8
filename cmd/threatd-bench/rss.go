package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// rssMain samples the peak RSS (VmHWM) of every process whose executable is
// under -dir, and the peak of its anonymous part (RssAnon: without files
// mapped into memory, such as SQLite's database), every -every, until the
// file -out.stop exists, then writes "name kB anon-kB" lines to -out. It reads /proc itself: a shell loop forking
// readlink and awk per process took a noticeable share of the CPU the
// measured processes need.
func rssMain(args []string) error {
	fs := flag.NewFlagSet("rss", flag.ExitOnError)
	dir := fs.String("dir", "bin", "directory of the executables to watch")
	out := fs.String("out", "rss.txt", "file for the results")
	every := fs.Duration("every", 500*time.Millisecond, "sampling interval")
	_ = fs.Parse(args)
	root, err := filepath.Abs(*dir)
	if err != nil {
		return err
	}
	peak, anon := map[string]int{}, map[string]int{}
	for {
		sample(root, peak, anon)
		if _, err := os.Stat(*out + ".stop"); err == nil {
			break
		}
		time.Sleep(*every)
	}
	names := make([]string, 0, len(peak))
	for n := range peak {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "%s %d %d\n", n, peak[n], anon[n])
	}
	return os.WriteFile(*out, b.Bytes(), 0o644)
}

func sample(root string, peak, anon map[string]int) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		exe, err := os.Readlink("/proc/" + e.Name() + "/exe")
		if err != nil || !strings.HasPrefix(exe, root+"/") {
			continue
		}
		f, err := os.Open("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		name := filepath.Base(exe)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			for key, m := range map[string]map[string]int{"VmHWM:": peak, "RssAnon:": anon} {
				if v, ok := strings.CutPrefix(sc.Text(), key); ok {
					kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
					m[name] = max(m[name], kb)
				}
			}
		}
		f.Close()
	}
}
