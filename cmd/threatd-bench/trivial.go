package main

import (
	"context"
	"flag"
	"net/http"
	"os"
	"os/signal"
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
	_ = fs.Parse(args)
	e := echo.New()
	body := map[string]any{"is_malicious": false, "threat_count": 0, "details": nil}
	e.GET("/trivial", func(c *echo.Context) error { return c.JSON(http.StatusOK, body) })
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
