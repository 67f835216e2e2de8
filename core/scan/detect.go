package scan

import (
	"bytes"
	"encoding/json"
	"regexp"
)

var (
	goSumLine = regexp.MustCompile(`(?m)^\S+ v\S+ h1:[A-Za-z0-9+/=]+\s*$`)
	// A workflow's top-level jobs:, an action's runs:, and a uses: line.
	workflowJobs      = regexp.MustCompile(`(?m)^jobs:\s*$`)
	actionRuns        = regexp.MustCompile(`(?m)^runs:\s*$`)
	workflowUses      = regexp.MustCompile(`(?m)^\s*(?:-\s+)?uses:\s*\S`)
	goModModule       = regexp.MustCompile(`(?m)^module\s+\S+`)
	requirementLine   = regexp.MustCompile(`(?m)^[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]*\])?\s*===?\s*[A-Za-z0-9]`)
	tomlPackageHeader = regexp.MustCompile(`(?m)^\[\[package\]\]\s*$`)
	pnpmVersion       = regexp.MustCompile(`(?m)^lockfileVersion:\s*['"]?[0-9]`)
	gemSpecs          = regexp.MustCompile(`(?m)^GEM\s*$[\s\S]*^  specs:\s*$`)
	yarnV1            = regexp.MustCompile(`(?m)^# yarn lockfile v1\s*$`)
	yarnBerry         = regexp.MustCompile(`(?m)^__metadata:\s*$`)
	cargoSource       = regexp.MustCompile(`(?m)^(source = "registry\+|checksum = "|\[\[package\]\]\s*\nname = "[^"]+"\s*\nversion = "[^"]+"\s*\n(source|checksum|dependencies) =)`)
)

// byContent recognises a file from what it holds.
func byContent(data []byte) (Format, bool) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var probe struct {
			BOMFormat       string          `json:"bomFormat"`
			SPDXVersion     string          `json:"spdxVersion"`
			LockfileVersion json.RawMessage `json:"lockfileVersion"`
			ContentHash     string          `json:"content-hash"`
			Packages        json.RawMessage `json:"packages"`
		}
		if json.Unmarshal(trimmed, &probe) != nil {
			return "", false
		}
		switch {
		case probe.BOMFormat == "CycloneDX":
			return CycloneDX, true
		case probe.SPDXVersion != "":
			return SPDX, true
		case probe.LockfileVersion != nil:
			return NPMLock, true
		case probe.ContentHash != "" && probe.Packages != nil:
			return ComposerLock, true
		}
		return "", false
	}
	switch {
	case yarnV1.Match(data), yarnBerry.Match(data):
		return YarnLock, true
	case pnpmVersion.Match(data):
		return PNPMLock, true
	case workflowJobs.Match(data) && workflowUses.Match(data), actionRuns.Match(data) && workflowUses.Match(data):
		return GitHubActions, true
	case tomlPackageHeader.Match(data) && cargoSource.Match(data):
		return CargoLock, true
	case tomlPackageHeader.Match(data):
		return PoetryLock, true
	case gemSpecs.Match(data):
		return GemfileLock, true
	case goModModule.Match(data):
		return GoMod, true
	case goSumLine.Match(data):
		return GoSum, true
	case requirementLine.Match(data):
		return Requirements, true
	}
	return "", false
}
