package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"

	"github.com/labstack/echo/v5"
)

// startTLS serves handler over TLS 1.2+ with the given PEM files.
func startTLS(ctx context.Context, sc echo.StartConfig, handler http.Handler, certFile, keyFile string) error {
	cert, err := os.ReadFile(certFile)
	if err != nil {
		return fmt.Errorf("server.tls.cert_file: %w", err)
	}
	key, err := os.ReadFile(keyFile)
	if err != nil {
		return fmt.Errorf("server.tls.key_file: %w", err)
	}
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		return fmt.Errorf("server.tls: certificate and key do not form a pair: %w", err)
	}
	sc.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	return sc.StartTLS(ctx, handler, cert, key)
}
