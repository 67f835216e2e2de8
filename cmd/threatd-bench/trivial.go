package main

import (
	"context"
	"flag"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/labstack/echo/v5"
)

// trivialMain serves GET /trivial with a constant JSON body over TLS with
// the given certificate: the ceiling threatd's check path is compared with.
func trivialMain(args []string) error {
	fs := flag.NewFlagSet("trivial", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:8444", "address")
	cert := fs.String("cert", "data/tls/cert.pem", "certificate")
	key := fs.String("key", "data/tls/key.pem", "key")
	files := fs.String("files", "", "a directory whose files GET /files/NAME serves as they are (the firewall's comparison)")
	_ = fs.Parse(args)
	e := echo.New()
	body := map[string]any{"is_malicious": false, "threat_count": 0, "details": nil}
	e.GET("/trivial", func(c *echo.Context) error { return c.JSON(http.StatusOK, body) })
	var small sync.Map // path → bytes
	if *files != "" {
		// The same bytes served plainly: small files from memory, as the
		// firewall serves a cached document; large ones from disk.
		// POST too: the same bytes as a search's answer (extensionquery).
		e.Match([]string{http.MethodGet, http.MethodPost}, "/files/:name", func(c *echo.Context) error {
			p := filepath.Join(*files, filepath.Base(c.Param("name")))
			if fi, err := os.Stat(p); err == nil && fi.Size() > 1<<20 {
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				defer f.Close()
				c.Response().Header().Set("Content-Type", "application/octet-stream")
				http.ServeContent(c.Response(), c.Request(), "", fi.ModTime(), f)
				return nil
			}
			b, ok := small.Load(p)
			if !ok {
				data, err := os.ReadFile(p)
				if err != nil {
					return echo.ErrNotFound
				}
				b, _ = small.LoadOrStore(p, data)
			}
			return c.Blob(http.StatusOK, "application/json", b.([]byte))
		})
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	certPEM, err := os.ReadFile(*cert)
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(*key)
	if err != nil {
		return err
	}
	sc := echo.StartConfig{Address: *listen, HideBanner: true, HidePort: true}
	return sc.StartTLS(ctx, e, certPEM, keyPEM)
}
