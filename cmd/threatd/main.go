// Command threatd is the threat-intelligence daemon and its administration
// CLI (docs/cli.md): serve, migrate, bootstrap, user, token.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/threatd/threatd/config"
	"github.com/threatd/threatd/core"
	"github.com/threatd/threatd/plugins"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// commit is the git commit of the build, set by make build the same way;
// otherwise what the Go toolchain recorded (debug.ReadBuildInfo).
var commit = ""

// flagKeys maps command-line flags to configuration keys (the last source of
// docs/configuration.md's order).
var flagKeys = map[string]string{
	"listen":         "server.listen",
	"tls-mode":       "server.tls.mode",
	"data-dir":       "data_dir",
	"plugins-dir":    "plugins.dir",
	"storage-plugin": "storage.plugin",
	"storage-dsn":    "storage.dsn",
	"log-level":      "log.level",
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRoot().ExecuteContext(ctx)
	stop()
	var exit *exitError
	if errors.As(err, &exit) {
		if exit.err != nil {
			fmt.Fprintln(os.Stderr, "threatd:", exit.err)
		}
		os.Exit(exit.code)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "threatd:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "threatd",
		Short:         "threatd: a self-hostable threat-intelligence service",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	pf := root.PersistentFlags()
	pf.String("config", "", "YAML configuration file")
	pf.String("data-dir", "", "data directory (config data_dir)")
	pf.String("plugins-dir", "", "plugin directory (config plugins.dir)")
	pf.String("storage-plugin", "", "storage plugin name (config storage.plugin)")
	pf.String("storage-dsn", "", "storage address (config storage.dsn)")
	pf.String("log-level", "", "log level: debug, info, warn, error (config log.level)")
	root.AddCommand(serveCmd(), migrateCmd(), bootstrapCmd(), userCmd(), tokenCmd(), reviewCmd(), copyStorageCmd(), importCmd(), exportCmd(), scanCmd(), analyzeCmd(), analysisCmd(), exposureCmd(), webhookCmd(), firewallCmd(), campaignCmd(), versionCmd())
	// A wrong flag names the command's usage and where its flags are
	// (every subcommand inherits this).
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nUsage: %s\nRun '%s --help' for its flags", err, c.UseLine(), c.CommandPath())
	})
	return root
}

// loadConfig reads the configuration for cmd from --config, the environment
// and the flags.
func loadConfig(cmd *cobra.Command) (config.Config, error) {
	path, _ := cmd.Flags().GetString("config")
	return config.Load(path, nil, cmd.Flags(), flagKeys)
}

// newLogger returns the daemon's structured logger on stderr: JSON, or
// text (log.format: text, or auto on a terminal, as under make run).
func newLogger(level, format string) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(strings.ToUpper(level)))
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "text" || format == "auto" && isTerminal(os.Stderr) {
		return slog.New(slog.NewTextHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, opts))
}

// isTerminal says whether f is a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// env is what every command that touches storage needs.
type env struct {
	cfg   config.Config
	log   *slog.Logger
	store *plugins.StorageClient
}

// openEnv loads the configuration, starts the storage plugin and applies
// pending migrations. Administrative commands log only warnings unless
// --log-level says otherwise; the daemon (daemon set: serve) logs at the
// configured level and opens the storage exclusively (one daemon per
// SQLite file). restarted, when not nil, hears of each plugin restart
// (metrics). Only a command that makes a database (serve, migrate,
// bootstrap: create) creates a missing one, and its data directory; every
// other command refuses it, naming it.
func openEnv(cmd *cobra.Command, daemon bool, create creation, restarted func(kind, name string)) (*env, error) {
	quiet := !daemon
	cfg, err := loadConfig(cmd)
	if err != nil {
		return nil, err
	}
	level := cfg.Log.Level
	if quiet && !cmd.Flags().Changed("log-level") && os.Getenv(config.EnvPrefix+"LOG__LEVEL") == "" {
		level = "warn"
	}
	log := newLogger(level, cfg.Log.Format)
	if create != openExisting {
		if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("data_dir %s: %w", cfg.DataDir, err)
		}
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	host := &plugins.Host{Dir: cfg.Plugins.Dir, Log: log, Restarted: restarted}
	store, err := host.StartStorage(cmd.Context(), cfg.Storage.Plugin, plugins.StorageConfig{
		DSN: cfg.Storage.DSN, DataDir: dataDir, Settings: cfg.Storage.Settings, Exclusive: daemon,
		Create: create != openExisting, CreateEmpty: create == createEvenEmpty,
	})
	if err != nil {
		return nil, err
	}
	applied, err := store.Migrate(cmd.Context())
	if err != nil {
		_ = store.Close()
		return nil, err
	}
	if len(applied) > 0 {
		log.Info("migrations applied", "migrations", applied)
	}
	return &env{cfg: cfg, log: log, store: store}, nil
}

// creation says whether openEnv may create the database.
type creation int

const (
	// openExisting refuses a missing database (every command but these).
	openExisting creation = iota
	// createMissing creates a missing database (serve, bootstrap).
	createMissing
	// createEvenEmpty also makes an empty SQLite file a database
	// (migrate).
	createEvenEmpty
)

func (e *env) close() { _ = e.store.Close() }

// friendly rewrites domain errors for a terminal.
func friendly(err error) error {
	var fe *core.FieldError
	if errors.As(err, &fe) {
		if arg, ok := cliArgs[fe.Field]; ok {
			return fmt.Errorf("invalid %s argument: %s", arg, fe.Message)
		}
		if fe.Field == "" {
			return errors.New(fe.Message)
		}
		return fmt.Errorf("invalid --%s: %s", strings.ReplaceAll(fe.Field, "_", "-"), fe.Message)
	}
	return err
}

// cliArgs are the command-line names of the domain's fields that the
// commands take as positional arguments, not flags.
var cliArgs = map[string]string{"threat_id": "ID", "revision": "REV"}
