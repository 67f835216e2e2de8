package core

import "strings"

// NormalizePyPIName is a PyPI project name in PEP 503 normal form: lower
// case, every run of - _ . one "-".
// A name already in normal form is returned as it is, without a copy
// (every check of a PyPI package normalises its name).
func NormalizePyPIName(name string) string {
	name = strings.ToLower(name)
	normal := true
	for i := 0; i < len(name); i++ {
		if c := name[i]; c == '_' || c == '.' || (c == '-' && i > 0 && name[i-1] == '-') {
			normal = false
			break
		}
	}
	if normal {
		return name
	}
	var b strings.Builder
	b.Grow(len(name))
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '-', '_', '.':
			if i == 0 || !isPEP503Separator(name[i-1]) {
				b.WriteByte('-')
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// isPEP503Separator tells the bytes a run of which is one "-".
func isPEP503Separator(c byte) bool { return c == '-' || c == '_' || c == '.' }
