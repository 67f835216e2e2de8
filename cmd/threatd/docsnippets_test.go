package main_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/threatd/threatd/cmd/internal/testbin"
)

// A fenced block of the setup pages is marked by the comment on the line
// before it: `<!-- snippet NAME -->` (a setup step a test runs as it is
// written), `<!-- output NAME -->` (a transcript a test compares with what
// the client really prints), `<!-- example -->` (the shape of something
// the daemon writes: a refusal's JSON, a rule, a message) or
// `<!-- quickstart -->` (a step TestQuickstartDoc runs in order).
type docBlock struct {
	kind, name, lang, body string
	line                   int
}

var blockMarker = regexp.MustCompile(`^<!-- (snippet|output|example|quickstart)(?: ([a-z0-9-]+))?(?: .*)? ?-->$`)

// docBlocks reads the fenced blocks of doc, with their markers ("" when a
// block has none). A block indented in a list item loses its indent.
func docBlocks(t *testing.T, doc string) []docBlock {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testbin.ModuleRoot(), doc))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []docBlock
	var cur *docBlock
	var body []string
	indent, prev := "", ""
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			cur = &docBlock{lang: strings.TrimPrefix(trimmed, "```"), line: i + 1}
			indent = line[:len(line)-len(strings.TrimLeft(line, " "))]
			if m := blockMarker.FindStringSubmatch(prev); m != nil {
				cur.kind, cur.name = m[1], m[2]
			}
			body = nil
		case cur != nil && trimmed == "```":
			cur.body = strings.Join(body, "\n") + "\n"
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			body = append(body, strings.TrimPrefix(line, indent))
		}
		if trimmed != "" {
			prev = trimmed
		}
	}
	return blocks
}

// docSnippet is the block of doc marked kind NAME.
func docSnippet(t *testing.T, doc, kind, name string) string {
	t.Helper()
	for _, b := range docBlocks(t, doc) {
		if b.kind == kind && b.name == name {
			return b.body
		}
	}
	t.Fatalf("%s has no block marked <!-- %s %s -->", doc, kind, name)
	return ""
}

// snippetTests are the named blocks of each setup page, and the test that
// runs or compares each.
var snippetTests = map[string]map[string]string{
	"docs/firewall.md": {
		"fw-tls-names": "TestFirewallDocSnippets", "fw-cert": "TestFirewallDocSnippets", "fw-cert-check": "TestFirewallDocSnippets",
		"fw-npmrc": "TestFirewallDocSnippets", "fw-pip-conf": "TestFirewallDocSnippets", "fw-pip-env": "TestFirewallDocSnippets",
		"fw-go": "TestFirewallDocSnippets", "fw-maven-settings": "TestFirewallDocSnippets", "fw-maven-trust": "TestFirewallDocSnippets",
		"fw-cargo-config": "TestFirewallDocSnippets", "fw-cargo-env": "TestFirewallDocSnippets", "fw-gemfile": "TestFirewallDocSnippets",
		"fw-bundler": "TestFirewallDocSnippets", "fw-gem": "TestFirewallDocSnippets", "fw-nuget-config": "TestFirewallDocSnippets",
		"fw-oci-config": "TestFirewallDocSnippets", "fw-skopeo": "TestFirewallDocSnippets",
		"fw-ci-github-npm": "TestFirewallDocSnippets", "fw-ci-gitlab": "TestFirewallDocSnippets", "fw-ci-github-others": "TestFirewallDocSnippets",
		"fw-refusals": "TestFirewallDocSnippets", "fw-refusals-more": "TestFirewallDocSnippets",
		"fw-private": "TestFirewallPolicyDocSnippets", "fw-quarantine": "TestFirewallPolicyDocSnippets", "fw-waivers": "TestFirewallPolicyDocSnippets",
	},
	"docs/blocklists.md": {
		"bl-fetch": "TestBlocklistDocSnippets", "bl-export": "TestBlocklistDocSnippets", "bl-token": "TestBlocklistDocSnippets", "bl-cron": "TestBlocklistDocSnippets",
		"bl-unbound": "TestBlocklistDocSnippets", "bl-bind-options": "TestBlocklistDocSnippets", "bl-bind-local": "TestBlocklistDocSnippets",
		"bl-suricata-fetch": "TestBlocklistDocSnippets", "bl-suricata-update": "TestBlocklistDocSnippets",
	},
	"docs/siem.md": {
		"siem-config": "TestSIEMDocSnippets", "siem-rsyslog": "TestSIEMDocSnippets",
	},
	"docs/quickstart.md": {
		"qs-install": "TestQuickstartDoc", "qs-start": "TestQuickstartDoc",
	},
}

// TestDocSnippetsMarked: every fenced block of the setup pages is marked
// as a snippet a test runs, a transcript a test compares, a quick-start
// step, or an example of what the daemon writes; and the snippets are
// exactly those the tests know, so that a new one cannot go untested.
func TestDocSnippetsMarked(t *testing.T) {
	t.Parallel()
	for doc, names := range snippetTests {
		seen := map[string]bool{}
		for _, b := range docBlocks(t, doc) {
			switch {
			case b.kind == "":
				t.Errorf("%s:%d: a ```%s block without a marker (<!-- snippet NAME -->, <!-- output NAME -->, <!-- example --> or <!-- quickstart -->)", doc, b.line, b.lang)
			case (b.kind == "snippet" || b.kind == "output") && b.name == "":
				t.Errorf("%s:%d: a %s without a name", doc, b.line, b.kind)
			case b.kind == "snippet" || b.kind == "output":
				if names[b.name] == "" {
					t.Errorf("%s:%d: the %s %s is run by no test (add it to snippetTests and to the test)", doc, b.line, b.kind, b.name)
				}
				if seen[b.name] {
					t.Errorf("%s:%d: a second block named %s", doc, b.line, b.name)
				}
				seen[b.name] = true
			}
		}
		for name := range names {
			if !seen[name] {
				t.Errorf("%s has no block named %s", doc, name)
			}
		}
	}
}

// transcript is an output block: each `$ command` (a comment after # is
// the doc's note) and the lines it prints.
type transcriptEntry struct {
	command string
	want    []string
}

func transcript(block string) []transcriptEntry {
	var entries []transcriptEntry
	sc := bufio.NewScanner(strings.NewReader(block))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "$ "):
			cmd := strings.TrimPrefix(line, "$ ")
			if i := strings.Index(cmd, "   #"); i >= 0 {
				cmd = cmd[:i]
			}
			entries = append(entries, transcriptEntry{command: strings.TrimSpace(cmd)})
		case strings.TrimSpace(line) != "" && len(entries) > 0:
			e := &entries[len(entries)-1]
			e.want = append(e.want, strings.TrimSpace(line))
		}
	}
	return entries
}

// transcriptLine is the pattern of a line a transcript shows: … stands for
// any text, eight hex digits and a dash before it (0195a1b2-…) for an id.
func transcriptLine(want string) *regexp.Regexp {
	parts := regexp.MustCompile(`[0-9a-f]{8}-…`).Split(want, -1)
	for i, p := range parts {
		sub := strings.Split(p, "…")
		for j := range sub {
			sub[j] = regexp.QuoteMeta(sub[j])
		}
		parts[i] = strings.Join(sub, ".*?")
	}
	return regexp.MustCompile("^" + strings.Join(parts, `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`) + "$")
}

// matchTranscript checks that out holds each line of want, in order, as a
// whole line (after trimming, and without terminal colours).
func matchTranscript(t *testing.T, command string, want []string, out string) {
	t.Helper()
	lines := strings.Split(regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(out, ""), "\n")
	at := 0
	for _, w := range want {
		re := transcriptLine(w)
		found := false
		for ; at < len(lines); at++ {
			if re.MatchString(strings.TrimSpace(lines[at])) {
				found, at = true, at+1
				break
			}
		}
		if !found {
			t.Errorf("`%s` does not print, as the doc shows,\n  %s\nit prints:\n%s", command, w, out)
			return
		}
	}
}
