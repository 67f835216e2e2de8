package community

import (
	"regexp"
	"strings"
	"unicode"
)

// Signature is the MinHash signature of a report's texts (its threat and
// payload descriptions, less what every imported OSV record says:
// Text): the words, lowercased, less those of the reported resource's own
// name and long runs of digits or hex (hashes, versions, addresses differ
// between copies of one payload), in shingles of Shingle words. ok is
// false for a text of fewer than MinShingles shingles.
func Signature(r ReportText) (sig [Hashes]uint32, ok bool) {
	ws := Words(r)
	n := len(ws) - Shingle + 1
	if n < MinShingles {
		return sig, false
	}
	for i := range sig {
		sig[i] = ^uint32(0)
	}
	for i := 0; i < n; i++ {
		// FNV-1a of the shingle's words, each ended by a 0: the same
		// signature on every run and every daemon.
		x := uint64(14695981039346656037)
		for _, w := range ws[i : i+Shingle] {
			for j := 0; j < len(w); j++ {
				x = (x ^ uint64(w[j])) * 1099511628211
			}
			x *= 1099511628211
		}
		for j := range sig {
			// Hashes independent enough for MinHash: the shingle's hash
			// mixed with the position's constant.
			v := uint32(mix(x ^ (uint64(j+1) * 0x9e3779b97f4a7c15)))
			if v < sig[j] {
				sig[j] = v
			}
		}
	}
	return sig, true
}

// Words are the words of a report's text that suggestions compare.
func Words(r ReportText) []string {
	own := map[string]bool{}
	for _, w := range words(r.ResourceIdentifier) {
		own[w] = true
	}
	var ws []string
	for _, w := range words(Text(r)) {
		if !own[w] && !noise(w) {
			ws = append(ws, w)
		}
	}
	return ws
}

// osvFrame matches what OSV's malicious-packages records put around their
// sources' texts: the separator, the editors' line and each source's
// heading with its hash. Alike in thousands of records, they say nothing
// of the payload.
var osvFrame = regexp.MustCompile(`(?m)^[ \t]*(?:---|_?-= Per source details\. Do not edit below this line\.=-_?|## Source: \S+(?: \([0-9a-fA-F]+\))?)[ \t]*$`)

// ossfAnalysis matches the generic text of the OpenSSF Package Analysis
// source in those records: the identification line, "It is considered
// malicious because:" and its bullets ("- The package communicates with a
// domain associated with malicious activity."), a handful of sentences
// shared by thousands of unrelated reports.
var ossfAnalysis = regexp.MustCompile(`(?m)^[ \t]*(?:The OpenSSF Package Analysis project identified .*|It is considered malicious because:|- The package .*)[ \t]*$`)

// ghsaAdvice matches the GitHub advisory database's standard advice on a
// malicious package ("Any computer that has this package installed or
// running should be considered fully compromised. …"), to the end of its
// paragraph: the text of some fifteen thousand records.
var ghsaAdvice = regexp.MustCompile(`(?s)Any computer that has this package installed or running should be considered fully compromised\..*?(?:\n[ \t]*\n|$)`)

// osvSummary matches the summary OSV's records and threatd's import give a
// report without one: "Malicious code in NAME (ECOSYSTEM)", "Malicious npm
// package NAME".
var osvSummary = regexp.MustCompile(`^(?:Malicious code in \S+ \([^)]*\)|Malicious \S+ package \S+)$`)

// Text is what suggestions read of a report: its threat description
// (unless it is only the generic summary of an import) and its payload
// description, less OSV's frame, the OpenSSF analysis' generic text and
// the GitHub advisories' standard advice.
func Text(r ReportText) string {
	desc := strings.TrimSpace(r.ThreatDescription)
	if osvSummary.MatchString(desc) {
		desc = ""
	}
	payload := osvFrame.ReplaceAllString(r.PayloadDescription, "")
	if strings.Contains(payload, "The OpenSSF Package Analysis project identified") {
		payload = ossfAnalysis.ReplaceAllString(payload, "")
	}
	if strings.Contains(payload, "should be considered fully compromised") {
		payload = ghsaAdvice.ReplaceAllString(payload, "\n")
	}
	return desc + "\n" + payload
}

// ExcerptRunes is the length of the excerpt a near-duplicate suggestion
// shows.
const ExcerptRunes = 100

// Excerpt is the start of a report's text as suggestions show it.
func Excerpt(r ReportText, n int) string {
	t := strings.Join(strings.Fields(Text(r)), " ")
	if rs := []rune(t); len(rs) > n {
		return string(rs[:n-1]) + "…"
	}
	return t
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// words splits text into lowercase runs of letters and digits.
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// noise says whether a word is a number, a version or a hash: six or more
// characters of digits and hex letters with a digit among them.
func noise(w string) bool {
	if len(w) < 6 {
		return false
	}
	digit := false
	for _, r := range w {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'f':
		default:
			return false
		}
	}
	return digit
}
