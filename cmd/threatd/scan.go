package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/threatd/threatd/cmd/internal/daemon"
	"github.com/threatd/threatd/config"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/core/index"
	"github.com/threatd/threatd/core/scan"
)

// exitError ends threatd with a given status; err, when set, is printed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// scanFailed is threatd scan's error status (2): a finding is 1.
func scanFailed(err error) error {
	var ee *exitError
	if err == nil || errors.As(err, &ee) {
		return err
	}
	return &exitError{code: 2, err: err}
}

func scanCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scan PATH...",
		Short: "Check every package of lockfiles, SBOMs and GitHub Actions workflows against the verified reports (exit 1 when one is malicious)",
		Long: `Reads lockfiles and SBOMs — package-lock.json (v1–v3), yarn.lock,
pnpm-lock.yaml, requirements.txt, poetry.lock, go.mod, go.sum, Cargo.lock,
Gemfile.lock, composer.lock, CycloneDX JSON 1.4–1.6, SPDX 2.3 JSON — and
GitHub Actions workflows and action.yml files, and checks every package,
by registry, name and version, as check-malicious does (docs/ci.md); each
uses: of a workflow as the repository https://github.com/owner/repo and
as the package owner/repo of github-actions at its ref. The format comes
from the file name, else its content. A directory is read for its
workflows (.github/workflows/*.yml) and actions (action.yml).

With --server (or THREATD_URL) it asks a threatd daemon, with --token (or
THREATD_TOKEN); without, it reads the configured storage.

Exit status: 1 when a package is malicious (unless --fail-on none), 0 when
none is, 2 on an error (an unreadable file, an unknown format, a daemon
that refuses).

  threatd scan package-lock.json
  threatd scan .    # the repository's workflows and actions
  threatd scan --format sarif --server https://threatd.example.com/functions/v1 \
    --token "$THREATD_TOKEN" go.sum requirements.txt > threatd.sarif`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return scanFailed(errors.New("scan: name at least one lockfile, SBOM, workflow or directory\nUsage: " + cmd.UseLine()))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return scanFailed(runScan(cmd, args))
		},
	}
	f := cmd.Flags()
	f.String("format", "text", "output: text, json or sarif")
	f.String("fail-on", "any", "exit 1 when a package is malicious (any), or never (none)")
	f.String("server", "", "a threatd daemon's API address, e.g. https://threatd.example.com/functions/v1 (or THREATD_URL)")
	f.String("token", "", "an API token for --server (or THREATD_TOKEN)")
	f.String("project", "", "with --server: keep the file's packages as this project's inventory, replacing its last (docs/exposure.md)")
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return scanFailed(fmt.Errorf("%w\nUsage: %s\nRun '%s --help' for its flags", err, c.UseLine(), c.CommandPath()))
	})
	return cmd
}

// scanInput is one file to scan.
type scanInput struct {
	name   string // as shown in the answer
	data   []byte
	format scan.Format
}

func runScan(cmd *cobra.Command, args []string) error {
	format, _ := cmd.Flags().GetString("format")
	failOn, _ := cmd.Flags().GetString("fail-on")
	server, _ := cmd.Flags().GetString("server")
	token, _ := cmd.Flags().GetString("token")
	if format != "text" && format != "json" && format != "sarif" {
		return fmt.Errorf("--format must be text, json or sarif (got %q)", format)
	}
	if failOn != "any" && failOn != "none" {
		return fmt.Errorf("--fail-on must be any or none (got %q)", failOn)
	}
	if server == "" {
		server = os.Getenv("THREATD_URL")
	}
	if token == "" {
		token = os.Getenv("THREATD_TOKEN")
	}
	project, _ := cmd.Flags().GetString("project")
	if project != "" && (server == "" || len(args) != 1) {
		return errors.New("--project keeps one file's packages as the project's inventory on a daemon: name --server (or THREATD_URL) and one lockfile or SBOM")
	}
	maxBytes := int64(scan.DefaultMaxBytes)
	var cfg config.Config
	if server == "" {
		var err error
		if cfg, err = loadConfig(cmd); err != nil {
			return err
		}
		maxBytes = int64(cfg.Scan.MaxBytes)
	}
	paths, err := scanPaths(args)
	if err != nil {
		return err
	}
	var inputs []scanInput
	for _, path := range paths {
		in, err := readScanInput(cmd.Context(), path, maxBytes)
		if err != nil {
			return err
		}
		inputs = append(inputs, in)
	}
	var (
		answer scan.Answer
		site   string
	)
	if server != "" {
		answer, site, err = scanRemote(cmd.Context(), server, token, project, inputs)
	} else {
		answer, site, err = scanLocal(cmd, cfg, inputs)
	}
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	switch format {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(answer)
	case "sarif":
		rep, e := answer.SARIF(version, site)
		if e != nil {
			return e
		}
		err = rep.PrettyWrite(out)
	default:
		err = answer.WriteText(out)
	}
	if err != nil {
		return err
	}
	if answer.Count > 0 && failOn == "any" {
		return &exitError{code: 1}
	}
	return nil
}

// scanPaths are the files to read: each file named, and the GitHub
// Actions files below each directory named (its workflows and actions'
// action.yml; not below .git, node_modules or vendor), in path order.
func scanPaths(args []string) ([]string, error) {
	var out []string
	for _, arg := range args {
		st, err := os.Stat(arg)
		if err != nil || !st.IsDir() {
			out = append(out, arg) // an error is readScanInput's to say
			continue
		}
		var found []string
		err = filepath.WalkDir(arg, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); p != arg && (n == ".git" || n == "node_modules" || n == "vendor") {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() && scan.IsWorkflowPath(filepath.ToSlash(p)) {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%s: no GitHub Actions files in it (.github/workflows/*.yml or *.yaml, action.yml): name lockfiles and SBOMs as files", arg)
		}
		slices.Sort(found)
		out = append(out, found...)
	}
	return out, nil
}

// readScanInput reads and recognises one file; its name in the answer is
// the path as given, relative to the working directory when it is under it
// (code scanning places results by repository-relative paths). A file
// that blocks (a FIFO nobody writes to, a stalled network mount) gives way
// to ctx: SIGINT and SIGTERM end the scan (exit status 2).
func readScanInput(ctx context.Context, path string, maxBytes int64) (scanInput, error) {
	type read struct {
		data []byte
		err  error
	}
	done := make(chan read, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			done <- read{nil, err}
			return
		}
		defer f.Close()
		data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
		if err != nil {
			err = fmt.Errorf("%s: %w", path, err)
		}
		done <- read{data, err}
	}()
	var r read
	select {
	case r = <-done:
	case <-ctx.Done():
		return scanInput{}, &exitError{code: 2, err: fmt.Errorf("scan interrupted while reading %s", path)}
	}
	data, err := r.data, r.err
	if err != nil {
		return scanInput{}, err
	}
	if int64(len(data)) > maxBytes {
		return scanInput{}, fmt.Errorf("%s is larger than %d bytes, the most one scan reads (scan.max_bytes)", path, maxBytes)
	}
	name := filepath.Clean(path)
	if filepath.IsAbs(name) {
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(wd, name); err == nil && !strings.HasPrefix(rel, "..") {
				name = rel
			}
		}
	}
	name = filepath.ToSlash(name)
	format, err := scan.Detect(name, data, "")
	if err != nil {
		return scanInput{}, fmt.Errorf("%s: %w", path, err)
	}
	return scanInput{name: name, data: data, format: format}, nil
}

// scanLocal checks the files against the configured storage: the index of
// verified reports loaded as the daemon loads it, then every package
// matched in memory.
func scanLocal(cmd *cobra.Command, cfg config.Config, inputs []scanInput) (scan.Answer, string, error) {
	var files []scan.File
	for _, in := range inputs {
		f, err := scan.Parse(in.name, in.data, in.format)
		if err != nil {
			return scan.Answer{}, "", err
		}
		files = append(files, f)
	}
	var answer scan.Answer
	err := withEnv(cmd, func(e *env) error {
		idx := index.New(e.store, e.cfg.Cache.Records)
		if err := idx.Load(cmd.Context()); err != nil {
			return fmt.Errorf("loading the verified reports: %w", err)
		}
		res, err := scan.Check(cmd.Context(), idx, files)
		if err != nil {
			return err
		}
		signals, err := loadCommunity(cmd.Context(), e)
		if err != nil {
			return err
		}
		answer = res.Answer(core.Principal{}, daemon.LocalSite(cfg), signals)
		return nil
	})
	return answer, daemon.LocalSite(cfg), err
}

// scanRemote sends each file to the daemon's POST /scan and merges the
// answers.
func scanRemote(ctx context.Context, server, token, project string, inputs []scanInput) (scan.Answer, string, error) {
	base, err := url.Parse(strings.TrimSuffix(server, "/"))
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return scan.Answer{}, "", fmt.Errorf("--server must be the daemon's API address, e.g. https://threatd.example.com/functions/v1 (got %q)", server)
	}
	if base.Path == "" {
		base.Path = "/functions/v1" // the default base path
	}
	if token == "" {
		return scan.Answer{}, "", errors.New("--server needs an API token: --token or THREATD_TOKEN")
	}
	site := base.Scheme + "://" + base.Host
	client := &http.Client{Timeout: 5 * time.Minute}
	merged := scan.Answer{Malicious: []scan.Malicious{}, Files: []scan.FileSummary{}, Skipped: []scan.FileSkipped{}}
	for _, in := range inputs {
		u := *base
		u.Path += "/scan"
		q := url.Values{"file": {in.name}, "format": {string(in.format)}}
		if project != "" {
			q.Set("project", project)
		}
		u.RawQuery = q.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(in.data))
		if err != nil {
			return scan.Answer{}, "", err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/octet-stream")
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return scan.Answer{}, "", fmt.Errorf("%s: %w", in.name, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
		resp.Body.Close()
		if err != nil {
			return scan.Answer{}, "", fmt.Errorf("%s: reading the answer: %w", in.name, err)
		}
		if resp.StatusCode != http.StatusOK {
			var e struct {
				Error string `json:"error"`
			}
			if json.Unmarshal(body, &e) != nil || e.Error == "" {
				e.Error = strings.TrimSpace(string(body[:min(len(body), 200)]))
			}
			return scan.Answer{}, "", fmt.Errorf("%s: the server answered %s: %s", in.name, resp.Status, e.Error)
		}
		var a scan.Answer
		if err := json.Unmarshal(body, &a); err != nil {
			return scan.Answer{}, "", fmt.Errorf("%s: the server's answer is not a scan answer: %w", in.name, err)
		}
		merged.Packages += a.Packages
		merged.Malicious = append(merged.Malicious, a.Malicious...)
		merged.Files = append(merged.Files, a.Files...)
		merged.Skipped = append(merged.Skipped, a.Skipped...)
	}
	merged.Count = len(merged.Malicious)
	return merged, site, nil
}
