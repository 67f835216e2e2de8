package scan

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
	spdxjson "github.com/spdx/tools-golang/json"

	"github.com/threatd/threatd/core"
)

// parseCycloneDX reads a CycloneDX JSON SBOM (spec 1.2 to 1.6; 1.4–1.6
// are what current tools write) with CycloneDX's own Go library: every
// component, nested ones included, by its package URL. A component
// without one, or with a type threatd has no registry for, is skipped,
// named. The described subject (metadata.component) is not a dependency.
func parseCycloneDX(data []byte, f *File) error {
	var bom cdx.BOM
	if err := decodeJSON(data, &struct{}{}); err != nil {
		return err
	}
	if err := cdx.NewBOMDecoder(bytes.NewReader(data), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		return err
	}
	if bom.BOMFormat != "CycloneDX" {
		return fmt.Errorf("bomFormat is %q, not CycloneDX", bom.BOMFormat)
	}
	if bom.SpecVersion < cdx.SpecVersion1_2 {
		return fmt.Errorf("specVersion %s is older than 1.2 (JSON SBOMs start at 1.2)", bom.SpecVersion)
	}
	lines := objectLines(data)
	// walk reads list, the components member of the container parent.
	var walk func(list *[]cdx.Component, parent int32)
	walk = func(list *[]cdx.Component, parent int32) {
		if list == nil {
			return
		}
		arr, _ := lines.find(parent, "components")
		for i, c := range *list {
			node, ok := lines.find(arr.ord, strconv.Itoa(i))
			if !ok {
				node.ord = -1 // no lines below (never for a document objectLines read)
			}
			addPurl(f, c.PackageURL, componentName(c), c.Version, int(node.line))
			walk(c.Components, node.ord)
		}
	}
	walk(bom.Components, root)
	return nil
}

func componentName(c cdx.Component) string {
	if c.Group != "" {
		return c.Group + "/" + c.Name
	}
	return c.Name
}

// parseSPDX reads an SPDX 2.3 (or 2.2) JSON document with SPDX's own Go
// library: every package by the purl of its external references. A
// package without one is skipped, named.
func parseSPDX(data []byte, f *File) error {
	if err := decodeJSON(data, &struct{}{}); err != nil {
		return err
	}
	doc, err := spdxjson.Read(bytes.NewReader(data))
	if err != nil {
		return err
	}
	if doc == nil || !strings.HasPrefix(doc.SPDXVersion, "SPDX-2.") {
		return errors.New("it is not an SPDX 2 document (spdxVersion)")
	}
	lines := objectLines(data)
	packages, _ := lines.find(root, "packages")
	for i, p := range doc.Packages {
		if p == nil {
			continue
		}
		purl := ""
		for _, ref := range p.PackageExternalReferences {
			if ref != nil && ref.RefType == "purl" {
				purl = ref.Locator
				break
			}
		}
		addPurl(f, purl, p.PackageName, p.PackageVersion, lines.line(packages.ord, strconv.Itoa(i)))
	}
	return nil
}

// addPurl records an SBOM entry by its package URL: a package of a
// registry threatd knows, or a container image (docker, oci).
func addPurl(f *File, purl, name, version string, line int) {
	if purl == "" {
		f.skip(firstNonEmpty(name, "(unnamed)"), line, "no package URL (purl)")
		return
	}
	q, err := core.ParsePurl(purl)
	if err != nil {
		f.skip(purl, line, reason(err))
		return
	}
	p := Package{Registry: q.Ecosystem, Name: q.ResourceIdentifier, Version: firstNonEmpty(q.Version, version), Line: line, Purl: purl}
	if q.ReportType == core.TypeContainer {
		p.Type, p.Version = core.TypeContainer, "" // the image reference holds its tag or digest
	}
	f.Packages = append(f.Packages, p)
}

// reason is an error's message without its field name.
func reason(err error) string {
	var fe *core.FieldError
	if errors.As(err, &fe) {
		return fe.Message
	}
	return err.Error()
}
