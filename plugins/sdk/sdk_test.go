package sdk_test

import (
	"testing"

	"github.com/threatd/threatd/plugins/sdk"
)

func TestCSVCell(t *testing.T) {
	for in, want := range map[string]string{
		"@scope/name":                        "@scope/name",
		"@types/node":                        "@types/node",
		"@angular-devkit/build-angular":      "@angular-devkit/build-angular",
		"@SUM(1+1)*cmd|' /C calc'!A0":        "'@SUM(1+1)*cmd|' /C calc'!A0",
		"@scope/name(1)":                     "'@scope/name(1)",
		"@Scope/Name":                        "'@Scope/Name",
		"=HYPERLINK(\"http://x\",\"click\")": "'=HYPERLINK(\"http://x\",\"click\")",
		"+1+cmd|' /C calc'!A0":               "'+1+cmd|' /C calc'!A0",
		"-2+3":                               "'-2+3",
		"\t=1+1":                             "'\t=1+1",
		"lodash":                             "lodash",
		"https://evil.example/a=b":           "https://evil.example/a=b",
		"":                                   "",
	} {
		if got := sdk.CSVCell(in); got != want {
			t.Errorf("CSVCell(%q) = %q, want %q", in, got, want)
		}
	}
}
