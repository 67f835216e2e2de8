package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// writePages writes a list a page at a time, never holding it whole: a
// JSON array of show(x), or a table under header with row(x) a line (tab
// separated). next returns a page and whether another follows it.
func writePages[T any](out io.Writer, asJSON bool, header string, next func() ([]T, bool, error), show func(T) any, row func(T) string) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if asJSON {
		fmt.Fprint(out, "[")
	} else {
		fmt.Fprintln(tw, header)
	}
	n := 0
	for more := true; more; {
		var page []T
		var err error
		if page, more, err = next(); err != nil {
			return err
		}
		for _, x := range page {
			if asJSON {
				b, err := json.Marshal(show(x))
				if err != nil {
					return err
				}
				if n > 0 {
					fmt.Fprint(out, ",")
				}
				_, _ = out.Write(b)
			} else {
				fmt.Fprintln(tw, row(x))
			}
			n++
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if asJSON {
		fmt.Fprintln(out, "]")
	}
	return nil
}
