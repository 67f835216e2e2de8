// Command crashy is a test exporter that dies in the middle of a request
// when asked (?crash=1), to check that the daemon answers 502 and restarts it.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/threatd/threatd/plugins/sdk"
)

func main() {
	sdk.ServeExporter("crashy", "crashes on request", func(_ context.Context, req sdk.Request) (sdk.Document, error) {
		if req.Query["crash"] == "1" {
			os.Exit(3)
		}
		return sdk.Document{ContentType: "text/plain", Body: []byte(fmt.Sprintf("records=%d pid=%d", len(req.Records), os.Getpid()))}, nil
	})
}
