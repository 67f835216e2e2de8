// Package pgtest gives tests a real, throwaway PostgreSQL server: a cluster
// initialised in a temporary directory, listening on 127.0.0.1 and a unix
// socket there, started once per test process and stopped by Stop (call it
// from TestMain). Tests that need PostgreSQL skip only when told to with
// THREATD_TEST_POSTGRES=off; otherwise a missing server is a failure.
//
// THREATD_TEST_PG_DSN, when set, names an existing server to use instead
// (an administrative DSN able to CREATE DATABASE).
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"
)

var (
	once     sync.Once
	cluster  *Cluster
	startErr error
)

// Cluster is a running throwaway server.
type Cluster struct {
	dir, bin, port string
	asPostgres     bool
	// AdminDSN connects as the superuser to the postgres database.
	AdminDSN string
}

// Enabled reports whether PostgreSQL tests should run.
func Enabled() bool { return os.Getenv("THREATD_TEST_POSTGRES") != "off" }

// Server returns the shared server, starting it on first use.
func Server(t testing.TB) *Cluster {
	t.Helper()
	if !Enabled() {
		t.Skip("PostgreSQL tests disabled by THREATD_TEST_POSTGRES=off")
	}
	once.Do(func() {
		if dsn := os.Getenv("THREATD_TEST_PG_DSN"); dsn != "" {
			cluster = &Cluster{AdminDSN: dsn}
			return
		}
		cluster, startErr = start()
	})
	if startErr != nil {
		t.Fatalf("starting a throwaway PostgreSQL (install it with `apt-get install postgresql`, or set THREATD_TEST_POSTGRES=off to skip these tests): %v", startErr)
	}
	return cluster
}

// Stop stops the server started by this process, if any.
func Stop() {
	if cluster == nil || cluster.dir == "" {
		return
	}
	_ = cluster.pgctl("-D", filepath.Join(cluster.dir, "data"), "-m", "immediate", "-w", "stop")
	_ = os.RemoveAll(cluster.dir)
}

var dbNameRe = regexp.MustCompile(`[^a-z0-9_]+`)

// Database creates a fresh database and returns its DSN.
func (c *Cluster) Database(t testing.TB, name string) string {
	t.Helper()
	name = dbNameRe.ReplaceAllString(strings.ToLower(name), "_")
	if len(name) > 50 {
		name = name[len(name)-50:]
	}
	name = "t_" + strings.Trim(name, "_") + fmt.Sprintf("_%d", time.Now().UnixNano()%1_000_000_000)
	db := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(c.AdminDSN)))
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	return strings.Replace(c.AdminDSN, "/postgres?", "/"+name+"?", 1)
}

func start() (*Cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "threatd-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, bin: bin}
	if u, err := user.Current(); err == nil && u.Uid == "0" {
		// initdb refuses to run as root: run the server as the postgres user.
		c.asPostgres = true
		if out, err := exec.Command("chown", "postgres:postgres", dir).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("chown %s: %v %s", dir, err, out)
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	c.port = port
	if err := c.run(filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C.UTF-8", "--no-sync"); err != nil {
		return nil, err
	}
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %s -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300", port, dir)
	if err := c.pgctl("-D", filepath.Join(dir, "data"), "-l", filepath.Join(dir, "server.log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		return nil, fmt.Errorf("%v\n%s", err, log)
	}
	c.AdminDSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable", port)
	return c, nil
}

func (c *Cluster) pgctl(args ...string) error {
	return c.run(filepath.Join(c.bin, "pg_ctl"), args...)
}

func (c *Cluster) run(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	if c.asPostgres {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", filepath.Base(name), err, out)
	}
	return nil
}

// findBin returns the newest /usr/lib/postgresql/N/bin, or the directory of
// initdb on the PATH.
func findBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("initdb not found (no /usr/lib/postgresql/*/bin/initdb and none on the PATH)")
}

func versionOf(dir string) int {
	var v int
	fmt.Sscanf(filepath.Base(filepath.Dir(dir)), "%d", &v)
	return v
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port, nil
}
