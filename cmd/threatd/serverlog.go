package main

import (
	"context"
	stdlog "log"
	"log/slog"
	"strings"
)

// serverErrorLog is net/http's error log for the API server. A client that
// opens a connection and leaves before or during the TLS handshake (load
// balancer probes, port scanners, a load generator's last connections) is
// not a server error: those lines go to debug; anything else stays an error.
func serverErrorLog(log *slog.Logger) *stdlog.Logger {
	return stdlog.New(serverLogWriter{log: log}, "", 0)
}

type serverLogWriter struct{ log *slog.Logger }

func (w serverLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	level := slog.LevelError
	if strings.HasPrefix(msg, "http: TLS handshake error") {
		level = slog.LevelDebug
	}
	w.log.Log(context.Background(), level, msg)
	return len(p), nil
}
