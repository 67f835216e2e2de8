package web

import "testing"

func TestGrouped(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 29548: "29,548", 100000: "100,000",
		1000000: "1,000,000", -1234567: "-1,234,567", 9223372036854775807: "9,223,372,036,854,775,807"} {
		if got := grouped(n); got != want {
			t.Errorf("grouped(%d) = %q, want %q", n, got, want)
		}
	}
}
