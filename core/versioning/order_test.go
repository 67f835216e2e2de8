package versioning

import "testing"

func TestPrevious(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		registry string
		versions []string
		v, want  string
	}{
		{"npm", []string{"1.0.0", "1.2.0", "1.10.0", "2.0.0-beta.1", "2.0.0"}, "2.0.0", "2.0.0-beta.1"},
		{"npm", []string{"1.0.0", "1.2.0", "1.10.0"}, "1.10.0", "1.2.0"},
		{"npm", []string{"1.0.0"}, "1.0.0", ""},
		{"go", []string{"v1.0.0", "v1.9.0", "v1.10.0", "v0.9.0"}, "v1.10.0", "v1.9.0"},
		{"pypi", []string{"1.0", "1.0.post1", "1.1rc1", "1.1.dev0", "1.1", "1.10"}, "1.1", "1.1rc1"},
		{"pypi", []string{"1.0", "1.0.post1", "1.1.dev0"}, "1.1.dev0", "1.0.post1"},
		{"pypi", []string{"2.9", "2.10", "2.31.0"}, "2.31.0", "2.10"},
		{"rubygems", []string{"1.0.0", "1.0.1.pre", "1.0.1", "1.0.10"}, "1.0.10", "1.0.1"},
		{"rubygems", []string{"1.0.0", "1.0.1.pre"}, "1.0.1", "1.0.1.pre"},
		{"crates.io", []string{"0.1.0", "0.1.9", "0.1.10"}, "0.1.10", "0.1.9"},
	} {
		if got := Previous(c.registry, c.versions, c.v); got != c.want {
			t.Errorf("Previous(%s, %v, %s) = %q, want %q", c.registry, c.versions, c.v, got, c.want)
		}
	}
}
