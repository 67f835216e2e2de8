package web

import (
	"bytes"
	"html/template"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

var (
	md = goldmark.New(goldmark.WithExtensions(extension.GFM))
	// policy is bluemonday's policy for user-generated content: no script,
	// no event handlers, no javascript: URLs, no style; every link gets
	// rel="nofollow noopener" and opens nothing in this page's context.
	policy = func() *bluemonday.Policy {
		p := bluemonday.UGCPolicy()
		p.RequireNoFollowOnLinks(true)
		p.AddTargetBlankToFullyQualifiedLinks(false)
		p.RequireNoReferrerOnLinks(false)
		p.AllowURLSchemes("http", "https", "mailto")
		return p
	}()
)

// renderMarkdown renders payload_description: Markdown (CommonMark with
// GitHub's tables, strikethrough and autolinks) to HTML, then sanitised.
// Raw HTML in the input is dropped by goldmark (it is not rendered unsafe)
// and whatever remains passes bluemonday.
func renderMarkdown(src string) template.HTML {
	if src == "" {
		return ""
	}
	var b bytes.Buffer
	if err := md.Convert([]byte(src), &b); err != nil {
		return template.HTML(template.HTMLEscapeString(src)) //nolint:gosec // escaped
	}
	out := policy.SanitizeBytes(b.Bytes())
	return markdownHTML(string(addNoopener(out)))
}

// addNoopener adds noopener to the rel bluemonday wrote (it writes
// rel="nofollow"; the policy has no option for noopener alone).
func addNoopener(b []byte) []byte {
	return bytes.ReplaceAll(b, []byte(`rel="nofollow"`), []byte(`rel="nofollow noopener"`))
}
