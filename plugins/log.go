package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
)

// stderrLogger forwards a plugin's stderr into the daemon's structured log,
// one record per line. JSON lines (slog's "level"/"msg" or hclog's
// "@level"/"@message") keep their level, message and attributes; any other
// line (a panic trace, a stray print) is logged at WARN as it is.
type stderrLogger struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

func newStderrLogger(log *slog.Logger, plugin string) *stderrLogger {
	return &stderrLogger{log: log.With("plugin", plugin)}
}

// Write buffers p and logs every complete line.
func (w *stderrLogger) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.logLine(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 { // an endless line: log what we have
		w.logLine(w.buf)
		w.buf = nil
	}
	return len(p), nil
}

func (w *stderrLogger) logLine(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	var rec map[string]any
	if line[0] != '{' || json.Unmarshal(line, &rec) != nil {
		w.log.Warn(string(line), "source", "plugin stderr")
		return
	}
	msg, _ := first(rec, "msg", "@message").(string)
	lvl, _ := first(rec, "level", "@level").(string)
	for _, k := range []string{"msg", "@message", "level", "@level", "time", "@timestamp", "@module", "@caller"} {
		delete(rec, k)
	}
	attrs := make([]slog.Attr, 0, len(rec))
	for k, v := range rec {
		attrs = append(attrs, slog.Any(k, v))
	}
	w.log.LogAttrs(context.Background(), parseLevel(lvl), msg, attrs...)
}

func first(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

func parseLevel(s string) slog.Level {
	switch strings.ToLower(s) {
	case "trace", "debug":
		return slog.LevelDebug
	case "warn", "warning":
		return slog.LevelWarn
	case "error", "fatal":
		return slog.LevelError
	}
	return slog.LevelInfo
}
