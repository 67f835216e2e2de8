package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
	// Restarted, when not nil, is called each time a plugin process is
	// started again after its predecessor exited (metrics).
	Restarted func(kind, name string)
	// CacheDir, when set, is a directory under which each plugin gets
	// one of its own (<kind>-<name>, made if missing), named to it in
	// CacheDirEnv: what it may keep between runs to save work. A plugin
	// must work the same without it.
	CacheDir string
}

// CacheDirEnv names the directory a plugin may keep files in between runs
// (Host.CacheDir); unset when it has none.
const CacheDirEnv = "THREATD_PLUGIN_CACHE_DIR"

func (h *Host) restarted(kind, name string) {
	if h.Restarted != nil {
		h.Restarted(kind, name)
	}
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

// maxProbedVersion is the highest plugin protocol version the handshake
// offers. Only ProtocolVersion is served; the others are offered so that a
// plugin of another version completes the handshake and is then refused by
// its negotiated version, a number, rather than by the wording of
// go-plugin's error.
const maxProbedVersion = 32

// probedVersions offers kind under every version up to maxProbedVersion.
func probedVersions(kind string, impl goplugin.Plugin) map[int]goplugin.PluginSet {
	m := make(map[int]goplugin.PluginSet, maxProbedVersion)
	for v := 1; v <= maxProbedVersion; v++ {
		m[v] = goplugin.PluginSet{kind: impl}
	}
	return m
}

// pluginEnvPassed are the environment variables a plugin process inherits
// from the daemon: the system's basics, the Go runtime's settings, the
// test-only fault switch (storage.TestFaultsEnv), and the PostgreSQL
// driver's defaults.
var pluginEnvPassed = []string{"PATH", "HOME", "TMPDIR", "TZ", "LANG", "LC_ALL",
	"GOMAXPROCS", "GOMEMLIMIT", "GOGC", "GODEBUG", "GORACE", "GOCOVERDIR", "GOTRACEBACK",
	"THREATD_TEST_FAULTS",
	// The PostgreSQL driver fills the gaps of a DSN from these.
	"PGHOST", "PGPORT", "PGUSER", "PGDATABASE"}

// pluginEnv keeps the variables of environ a plugin inherits
// (pluginEnvPassed).
func pluginEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(pluginEnvPassed, k) {
			out = append(out, kv)
		}
	}
	return out
}

// HandshakeTimeout bounds a plugin's start: the process must print its
// handshake line within it.
const HandshakeTimeout = 30 * time.Second

// plugin is one started plugin process.
type plugin struct {
	client *goplugin.Client
	// cancel kills the plugin's process group.
	cancel context.CancelFunc
}

// kill stops the plugin: go-plugin's graceful stop, then its whole process
// group.
func (p *plugin) kill() {
	p.client.Kill()
	p.cancel()
}

// exited reports whether the plugin process has exited.
func (p *plugin) exited() bool { return p.client.Exited() }

// start launches a plugin binary, completes the handshake and dispenses kind.
func (h *Host) start(kind, name string, impl goplugin.Plugin) (any, *plugin, error) {
	path, err := h.pluginPath(kind, name)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &plugin{cancel: cancel}
	// go-plugin gives up on the handshake after StartTimeout, then waits
	// for the plugin's stdout to close; a process (or a child of it) that
	// keeps it open would hang that wait forever. Past the timeout the
	// whole process group is killed, which closes it.
	guard := time.AfterFunc(HandshakeTimeout+2*time.Second, cancel)
	defer guard.Stop()
	log := h.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	binary := BinaryName(kind, name)
	cmd := pluginCmd(ctx, path)
	cmd.Env = pluginEnv(os.Environ())
	if h.CacheDir != "" {
		dir := filepath.Join(h.CacheDir, kind+"-"+name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			log.Warn("plugin cache directory not made; the plugin runs without it", "plugin", binary, "err", err.Error())
		} else {
			cmd.Env = append(cmd.Env, CacheDirEnv+"="+dir)
		}
	}
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: probedVersions(kind, impl),
		Cmd:              cmd,
		// A plugin gets the environment pluginEnv passes, not the
		// daemon's: secrets the daemon reads from its environment stay
		// in the daemon.
		SkipHostEnv:      true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		// go-plugin's own logger is off: the plugin's stderr is forwarded
		// line by line into our structured log instead.
		Logger:       hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard}),
		Stderr:       newStderrLogger(log, binary),
		StartTimeout: HandshakeTimeout,
		AutoMTLS:     true,
	})
	p.client = client
	rpc, err := client.Client()
	if err != nil {
		p.kill()
		return nil, nil, fmt.Errorf("%s plugin %q (%s) failed to start: %w", kind, name, path, err)
	}
	if v := client.NegotiatedVersion(); v != ProtocolVersion {
		p.kill()
		return nil, nil, fmt.Errorf("%s plugin %q (%s) speaks an incompatible plugin protocol: this daemon speaks version %d, the plugin version %d (build the plugin from the same release as the daemon)", kind, name, path, ProtocolVersion, v)
	}
	raw, err := rpc.Dispense(kind)
	if err != nil {
		p.kill()
		return nil, nil, fmt.Errorf("%s plugin %q (%s) does not serve the %s protocol: %w", kind, name, path, kind, err)
	}
	log.Info("plugin started", "plugin", binary, "path", path, "pid", client.ReattachConfig().Pid, "protocol", client.NegotiatedVersion())
	return raw, p, nil
}

// StartStorage starts the storage plugin threatd-storage-<name>, configures
// it, and returns a port.Store whose Close stops the process. The process is
// supervised: if it dies (killed, crashed), a new one is started with
// backoff and configured the same way, and calls go to it; meanwhile they
// fail with core.ErrUnavailable (HTTP 503 with Retry-After).
func (h *Host) StartStorage(ctx context.Context, name string, cfg StorageConfig) (*StorageClient, error) {
	sc, p, err := h.startStorage(ctx, name, cfg)
	if err != nil {
		return nil, err
	}
	sup := &storageSupervisor{host: h, name: name, cfg: cfg, client: sc, current: p, stop: make(chan struct{}), done: make(chan struct{})}
	sc.closer = sup.close
	go sup.watch()
	return sc, nil
}

// startStorage starts and configures one storage process.
func (h *Host) startStorage(ctx context.Context, name string, cfg StorageConfig) (*StorageClient, *plugin, error) {
	raw, p, err := h.start(KindStorage, name, &storagePlugin{})
	if err != nil {
		return nil, nil, err
	}
	sc, ok := raw.(*StorageClient)
	if !ok {
		p.kill()
		return nil, nil, fmt.Errorf("storage plugin %q: unexpected client type %T", name, raw)
	}
	if _, err := sc.Configure(ctx, cfg); err != nil {
		p.kill()
		return nil, nil, fmt.Errorf("storage plugin %q: configure: %w", name, err)
	}
	return sc, p, nil
}

// Restart bounds of a dead storage process.
const (
	storagePoll       = 100 * time.Millisecond
	storageBackoffMin = 100 * time.Millisecond
	storageBackoffMax = 5 * time.Second
)

// storageSupervisor restarts the storage process when it dies.
type storageSupervisor struct {
	host   *Host
	name   string
	cfg    StorageConfig
	client *StorageClient

	mu      sync.Mutex
	current *plugin
	stop    chan struct{}
	done    chan struct{}
	closed  bool
}

func (s *storageSupervisor) watch() {
	defer close(s.done)
	tick := time.NewTicker(storagePoll)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		dead := s.current.exited()
		s.mu.Unlock()
		if dead {
			s.restart()
		}
	}
}

// restart starts new processes, with backoff, until one is configured (or
// the supervisor is closed).
func (s *storageSupervisor) restart() {
	binary := BinaryName(KindStorage, s.name)
	s.host.warn("storage plugin process exited; restarting it (storage calls answer 503 meanwhile)", "plugin", binary)
	wait := storageBackoffMin
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), HandshakeTimeout)
		sc, p, err := s.host.startStorage(ctx, s.name, s.cfg)
		cancel()
		if err == nil {
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				p.kill()
				return
			}
			s.current.kill() // reap the dead one's group
			s.current = p
			s.client.rpc.Store(sc.rpc.Load())
			s.mu.Unlock()
			s.host.logf("storage plugin restarted", "plugin", binary, "attempt", attempt)
			s.host.restarted(KindStorage, s.name)
			return
		}
		s.host.warn("storage plugin restart failed; retrying", "plugin", binary, "attempt", attempt, "retry_in", wait.String(), "error", err.Error())
		select {
		case <-s.stop:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, storageBackoffMax)
	}
}

func (s *storageSupervisor) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	s.mu.Unlock()
	<-s.done
	s.mu.Lock()
	s.current.kill()
	s.mu.Unlock()
	s.host.logf("plugin stopped", "plugin", BinaryName(KindStorage, s.name))
	return nil
}

func (h *Host) logf(msg string, args ...any) {
	if h.Log != nil {
		h.Log.Info(msg, args...)
	}
}

func (h *Host) warn(msg string, args ...any) {
	if h.Log != nil {
		h.Log.Warn(msg, args...)
	}
}
