package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
)

// Host starts plugin processes from one directory.
type Host struct {
	// Dir is the plugin directory (config plugins.dir).
	Dir string
	// Log receives the plugins' stderr and lifecycle events.
	Log *slog.Logger
}

// pluginPath returns the path of a plugin binary, or a clear error when it is
// missing or not executable.
func (h *Host) pluginPath(kind, name string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("%s plugin name %q is invalid", kind, name)
	}
	path := filepath.Join(h.Dir, BinaryName(kind, name))
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s plugin %q not found: %s does not exist (build the plugins with `make build`, or point plugins.dir at them)", kind, name, path)
	}
	if err != nil {
		return "", fmt.Errorf("%s plugin %q: %w", kind, name, err)
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s plugin %q: %s is not an executable file", kind, name, path)
	}
	return path, nil
}

// start launches a plugin binary, completes the handshake and dispenses kind.
func (h *Host) start(kind, name string, impl goplugin.Plugin) (any, *goplugin.Client, error) {
	path, err := h.pluginPath(kind, name)
	if err != nil {
		return nil, nil, err
	}
	log := h.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	binary := BinaryName(kind, name)
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{ProtocolVersion: {kind: impl}},
		Cmd:              exec.Command(path),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		// go-plugin's own logger is off: the plugin's stderr is forwarded
		// line by line into our structured log instead.
		Logger:       hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard}),
		Stderr:       newStderrLogger(log, binary),
		StartTimeout: 30 * time.Second,
		AutoMTLS:     true,
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		if strings.Contains(strings.ToLower(err.Error()), "incompatible api version") {
			return nil, nil, fmt.Errorf("%s plugin %q (%s) speaks an incompatible plugin protocol: this daemon speaks version %d (%v)", kind, name, path, ProtocolVersion, err)
		}
		return nil, nil, fmt.Errorf("%s plugin %q (%s) failed to start: %w", kind, name, path, err)
	}
	raw, err := rpc.Dispense(kind)
	if err != nil {
		client.Kill()
		return nil, nil, fmt.Errorf("%s plugin %q (%s) does not serve the %s protocol: %w", kind, name, path, kind, err)
	}
	log.Info("plugin started", "plugin", binary, "path", path, "pid", client.ReattachConfig().Pid, "protocol", client.NegotiatedVersion())
	return raw, client, nil
}

// StartStorage starts the storage plugin threatd-storage-<name>, configures
// it, and returns a core.Store whose Close stops the process.
func (h *Host) StartStorage(ctx context.Context, name string, cfg StorageConfig) (*StorageClient, error) {
	raw, client, err := h.start(KindStorage, name, &storagePlugin{})
	if err != nil {
		return nil, err
	}
	sc, ok := raw.(*StorageClient)
	if !ok {
		client.Kill()
		return nil, fmt.Errorf("storage plugin %q: unexpected client type %T", name, raw)
	}
	sc.closer = func() error {
		client.Kill()
		h.logf("plugin stopped", "plugin", BinaryName(KindStorage, name))
		return nil
	}
	if _, err := sc.Configure(ctx, cfg); err != nil {
		client.Kill()
		return nil, fmt.Errorf("storage plugin %q: configure: %w", name, err)
	}
	return sc, nil
}

func (h *Host) logf(msg string, args ...any) {
	if h.Log != nil {
		h.Log.Info(msg, args...)
	}
}
