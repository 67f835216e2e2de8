// Command threatd-analyzer-rules is the default analyzer plugin
// (docs/analysis.md): YARA rules, through libyara, over every text file of
// an archive, with threatd's own rule set and the .yar files of
// analysis.rules_dir. The daemon starts it from plugins.dir; it is not
// meant to be run by hand.
package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/threatd/threatd/plugins"
	"github.com/threatd/threatd/plugins/rules"
)

func main() {
	plugins.ServeAnalyzer("rules", "YARA rules (threatd's own and analysis.rules_dir) and install-time execution", newAnalyzer())
}

// scanTimeout bounds one file's scan, in seconds (libyara's unit).
const scanTimeout = 20

// newAnalyzer is the analyzer over libyara, its rule sets compiled once
// per rules directory.
func newAnalyzer() *rules.Analyzer {
	var mu sync.Mutex
	cache := map[string]*yaraEngine{}
	return &rules.Analyzer{Timeout: 60 * time.Second, Engine: func(dir string) (rules.Engine, error) {
		mu.Lock()
		defer mu.Unlock()
		if e, ok := cache[dir]; ok {
			return e, nil
		}
		e, err := newEngine(dir)
		if err != nil {
			return nil, err
		}
		cache[dir] = e
		return e, nil
	}}
}

// yaraEngine is a compiled rule set: threatd's and a directory's.
type yaraEngine struct{ c *compiled }

func newEngine(dir string) (*yaraEngine, error) {
	srcs := rules.Shipped()
	own, err := rules.Dir(dir)
	if err != nil {
		return nil, err
	}
	srcs = append(srcs, own...)
	var in []ruleSource
	for _, s := range srcs {
		in = append(in, ruleSource{Name: s.Name, Text: s.Text, Path: s.Path})
	}
	c, err := compile(in)
	if err != nil {
		return nil, fmt.Errorf("compiling the YARA rules: %w", err)
	}
	return &yaraEngine{c: c}, nil
}

func (e *yaraEngine) Scan(data []byte) ([]rules.Match, error) {
	ms, err := e.c.scan(data, scanTimeout)
	out := make([]rules.Match, len(ms))
	for i, m := range ms {
		out[i] = rules.Match{Rule: m.Rule, Severity: m.Severity, Description: m.Description, Offset: m.Offset, Length: m.Length,
			PathInclude: m.PathInclude, PathExclude: m.PathExclude, Scope: m.Scope}
	}
	return out, err
}
