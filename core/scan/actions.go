package scan

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/threatd/threatd/core"
)

// IsWorkflowPath says whether name is a GitHub Actions file by where it
// is: a workflow (.github/workflows/*.yml or *.yaml) or an action's
// metadata (action.yml, action.yaml).
func IsWorkflowPath(name string) bool {
	name = strings.ReplaceAll(name, `\`, "/")
	base := strings.ToLower(path.Base(name))
	if base == "action.yml" || base == "action.yaml" {
		return true
	}
	ext := path.Ext(base)
	return (ext == ".yml" || ext == ".yaml") && strings.HasSuffix(strings.ToLower(path.Dir(name)), ".github/workflows")
}

// actionRef is owner/repo[/path]@ref, as GitHub reads uses:.
var actionRef = regexp.MustCompile(`^([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))/([A-Za-z0-9._-]{1,100})((?:/[^@/\s]+)*)@([^\s@]+)$`)

// parseWorkflow reads a workflow file or an action's action.yml: every
// uses: of a job (a reusable workflow), of a job's steps, and of a
// composite action's steps. owner/repo[/path]@ref is the repository
// github.com/owner/repo (a repository report names no scheme) and the
// package owner/repo of github-actions at ref; docker://image is an
// image; a local ./action, an expression and a reference without a ref
// are skipped, each with why.
func parseWorkflow(data []byte, f *File) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	if len(doc.Content) == 0 {
		return nil // an empty file: nothing to check
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return errors.New("it is not a YAML mapping")
	}
	jobs, runs := mappingValue(root, "jobs"), mappingValue(root, "runs")
	if jobs == nil && runs == nil {
		return errors.New("it has neither jobs (a workflow) nor runs (an action's action.yml)")
	}
	if jobs != nil {
		if jobs.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: jobs is not a mapping", jobs.Line)
		}
		for i := 1; i < len(jobs.Content); i += 2 {
			job := jobs.Content[i]
			if job.Kind != yaml.MappingNode {
				return fmt.Errorf("line %d: job %s is not a mapping", job.Line, jobs.Content[i-1].Value)
			}
			if u := mappingValue(job, "uses"); u != nil {
				f.uses(u)
			}
			if err := f.steps(mappingValue(job, "steps")); err != nil {
				return err
			}
		}
	}
	if runs != nil && runs.Kind == yaml.MappingNode {
		if err := f.steps(mappingValue(runs, "steps")); err != nil {
			return err
		}
	}
	return nil
}

// steps reads the uses: of a list of steps (nil: none).
func (f *File) steps(steps *yaml.Node) error {
	if steps == nil {
		return nil
	}
	if steps.Kind != yaml.SequenceNode {
		return fmt.Errorf("line %d: steps is not a list", steps.Line)
	}
	for _, step := range steps.Content {
		if step.Kind != yaml.MappingNode {
			return fmt.Errorf("line %d: a step is not a mapping", step.Line)
		}
		if u := mappingValue(step, "uses"); u != nil {
			f.uses(u)
		}
	}
	return nil
}

// uses adds what one uses: names, at its line.
func (f *File) uses(n *yaml.Node) {
	v := strings.TrimSpace(n.Value)
	switch {
	case n.Kind != yaml.ScalarNode || v == "":
		f.skip(v, n.Line, "uses: is not a reference")
	case strings.HasPrefix(v, "./") || strings.HasPrefix(v, "../") || v == ".":
		f.skip(v, n.Line, "a local action, part of this repository")
	case strings.Contains(v, "${{"):
		f.skip(v, n.Line, "an expression, known only when the workflow runs")
	case strings.HasPrefix(v, "docker://"):
		image := strings.TrimPrefix(v, "docker://")
		if image == "" {
			f.skip(v, n.Line, "docker:// names no image")
			return
		}
		f.Packages = append(f.Packages, Package{Name: image, Line: n.Line, Type: core.TypeContainer, Purl: dockerPurl(image)})
	default:
		m := actionRef.FindStringSubmatch(v)
		if m == nil {
			f.skip(v, n.Line, "not owner/repo[/path]@ref")
			return
		}
		repo := m[1] + "/" + m[2]
		f.Packages = append(f.Packages,
			Package{Registry: core.RegistryGitHubActions, Name: repo, Version: m[4], Line: n.Line},
			Package{Name: "github.com/" + repo, Line: n.Line, Type: core.TypeRepository, Purl: "pkg:github/" + strings.ToLower(repo)})
	}
}

// dockerPurl is the package URL of an image reference: pkg:docker/ and
// its repository, @ its tag or digest when it names one.
func dockerPurl(image string) string {
	repo, ref := image, ""
	if i := strings.LastIndex(image, "@"); i > 0 {
		repo, ref = image[:i], image[i+1:]
	} else if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		repo, ref = image[:i], image[i+1:]
	}
	if ref == "" {
		return "pkg:docker/" + repo
	}
	return "pkg:docker/" + repo + "@" + url.PathEscape(ref)
}
