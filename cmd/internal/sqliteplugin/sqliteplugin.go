// Package sqliteplugin is the SQLite storage plugin's opening of its
// database (cmd/threatd-storage-sqlite serves it); the in-process tests
// (cmd/internal/daemon) open their store with it too.
package sqliteplugin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/threatd/threatd/core/port"
	"github.com/threatd/threatd/plugins"
	"github.com/threatd/threatd/storage"
)

// Open opens the SQLite database cfg names, as the plugin process does for
// the daemon and the commands: the default <data_dir>/threatd.db made only
// by a command that makes a database, a storage.dsn that is a file path in
// a directory that exists, the daemon's lock (cfg.Exclusive), and the
// integrity check a daemon runs at start and every six hours.
func Open(_ context.Context, cfg plugins.StorageConfig) (port.Store, error) {
	path := cfg.DSN
	if path == "" {
		path = filepath.Join(cfg.DataDir, "threatd.db")
	} else if err := checkPath(path); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		// Only a command that makes a database (serve, migrate,
		// bootstrap) creates one: a command run in the wrong
		// directory must not answer from a new, empty database.
		if !cfg.Create {
			return nil, fmt.Errorf("sqlite: the database %s does not exist: run threatd migrate (or threatd serve, threatd bootstrap, make run) "+
				"to create it, or point data_dir or storage.dsn at your database", path)
		}
		if cfg.DSN == "" {
			// The default, <data_dir>/threatd.db: its directory is made.
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				return nil, fmt.Errorf("sqlite: create directory for %s: %w", path, err)
			}
		}
	}
	if cfg.Exclusive {
		if err := lockDaemon(path); err != nil {
			return nil, err
		}
	}
	opts, err := storage.OptionsFromSettings(cfg.Settings, os.Getenv)
	if err != nil {
		return nil, err
	}
	opts.CreateEmpty = cfg.CreateEmpty
	switch {
	case !cfg.Exclusive:
		opts.IntegrityEvery = 0 // administrative commands do not check
	case opts.IntegrityEvery == 0:
		// A daemon checks the whole file at start and every six hours.
		opts.IntegrityEvery = 6 * time.Hour
	}
	if opts.IntegrityEvery > 0 && CheckInChild {
		opts.CheckProcess = checkInChild
	}
	st, err := storage.Open(storage.SQLite, path, opts)
	if err != nil {
		return nil, err
	}
	slog.Info("storage configured", "backend", "sqlite", "path", path)
	return st, nil
}

// checkPath refuses a storage.dsn that is not a SQLite file path: a URL
// (postgres://… meant for the postgres plugin would otherwise become a file
// named "postgres:"), or a path whose directory does not exist (a typo
// would otherwise start an empty database somewhere else).
func checkPath(path string) error {
	if i := strings.Index(path, "://"); i > 0 {
		shown := path[:i] + "://…"
		if u, err := url.Parse(path); err == nil {
			shown = u.Redacted()
		}
		return fmt.Errorf("sqlite: storage.dsn %q is a URL, but the sqlite storage plugin takes a file path; "+
			"for PostgreSQL, set storage.plugin: postgres (--storage-plugin postgres)", shown)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("sqlite: the directory %s of storage.dsn %s does not exist; create it first "+
			"(only the default, <data_dir>/threatd.db, is created for you)", dir, path)
	}
	return nil
}

// lockDaemon takes the daemon's lock on the database, the file <path>.lock,
// for as long as this process runs: a second daemon on the same SQLite file
// would serve from caches the first one's writes do not refresh in time, and
// fight it for the single writer. Administrative commands do not take it.
func lockDaemon(path string) error {
	lockPath := path + ".lock"
	// A raw descriptor, never closed: an *os.File would be closed by its
	// finalizer once unreferenced, dropping the lock. The process's exit
	// releases it.
	fd, err := syscall.Open(lockPath, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("sqlite: daemon lock %s: %w", lockPath, err)
	}
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(lockPath); rerr == nil && len(b) > 0 {
			holder = " (pid " + strings.TrimSpace(string(b)) + ")"
		}
		_ = syscall.Close(fd)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fmt.Errorf("sqlite: another threatd daemon%s is serving %s: it holds the lock %s. "+
				"Run one daemon per SQLite database (several daemons can share PostgreSQL)", holder, path, lockPath)
		}
		return fmt.Errorf("sqlite: daemon lock %s: %w", lockPath, err)
	}
	_ = syscall.Ftruncate(fd, 0)
	_, _ = syscall.Pwrite(fd, []byte(strconv.Itoa(os.Getppid())+"\n"), 0)
	return nil
}
