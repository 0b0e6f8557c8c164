// Package pgtest starts a private PostgreSQL cluster with Queen 0.15.1's schema and procedures
// loaded (../shared/queen-pg), for the tests of package queenimport. Test-only: nothing outside
// _test files imports it.
//
// The cluster is Debian's postgresql (initdb and pg_ctl from /usr/lib/postgresql/*/bin), with
// its data directory and socket in a temporary directory and a free loopback port. PostgreSQL
// refuses to run as root, so when the test runs as root every server command runs as the
// `postgres` user through runuser. A missing PostgreSQL fails the test (t.Fatal), never skips
// it: .ci/run installs the package.
package pgtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a running private PostgreSQL holding database "queen" with Queen's schema.
type Cluster struct {
	URL  string // postgres://postgres@127.0.0.1:PORT/queen?sslmode=disable
	Conn *pgx.Conn
	t    testing.TB
}

// pgBin returns the newest installed PostgreSQL's binary name, or "".
func pgBin(name string) string {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(found) == 0 {
		return ""
	}
	sort.Slice(found, func(i, j int) bool { return pgVersion(found[i]) < pgVersion(found[j]) })
	return found[len(found)-1]
}

func pgVersion(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}

// SchemaDir is ../shared/queen-pg relative to the repository root (QUEEN_PG_DIR overrides).
func SchemaDir(t testing.TB) string {
	if d := os.Getenv("QUEEN_PG_DIR"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	// queenimport/pgtest/pg.go → repository root → ../shared/queen-pg; worktrees live in
	// /work/wt/<name>, the main checkout in /work/main: both are two levels below /work.
	root := filepath.Dir(filepath.Dir(filepath.Dir(file)))
	for _, d := range []string{filepath.Join(root, "..", "shared", "queen-pg"), filepath.Join(root, "..", "..", "shared", "queen-pg")} {
		if _, err := os.Stat(filepath.Join(d, "schema.sql")); err == nil {
			return d
		}
	}
	t.Fatalf("pgtest: Queen's schema (shared/queen-pg/schema.sql) not found near %s; set QUEEN_PG_DIR", root)
	return ""
}

// Start starts the cluster, creates database queen, loads the schema and every procedure in
// name order into schema queen, and stops the cluster when the test ends.
func Start(t testing.TB) *Cluster {
	t.Helper()
	initdb, pgctl := pgBin("initdb"), pgBin("pg_ctl")
	if initdb == "" || pgctl == "" {
		t.Fatal("pgtest: PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb); apt-get install -y postgresql")
	}
	dir, err := os.MkdirTemp("", "comb-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	asPG := func(args ...string) *exec.Cmd { return exec.Command(args[0], args[1:]...) }
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("pgtest: running as root needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		asPG = func(args ...string) *exec.Cmd {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--"}, args...)...)
		}
	}
	run := func(cmd *exec.Cmd) {
		t.Helper()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pgtest: %s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
		}
	}
	data := filepath.Join(dir, "data")
	run(asPG(initdb, "-D", data, "--auth=trust", "-U", "postgres", "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync"))
	port := freePort(t)
	run(asPG(pgctl, "-D", data, "-w", "-l", filepath.Join(dir, "log"), "-o",
		fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off", port, dir), "start"))
	t.Cleanup(func() { _ = asPG(pgctl, "-D", data, "-m", "immediate", "-w", "stop").Run() })

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port))
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE queen"); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	admin.Close(ctx)
	c := &Cluster{URL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/queen?sslmode=disable", port), t: t}
	if c.Conn, err = pgx.Connect(ctx, c.URL); err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	t.Cleanup(func() { c.Conn.Close(context.Background()) })
	c.Exec("CREATE SCHEMA IF NOT EXISTS queen")
	schema := SchemaDir(t)
	files, _ := filepath.Glob(filepath.Join(schema, "procedures", "*.sql"))
	sort.Strings(files)
	for _, f := range append([]string{filepath.Join(schema, "schema.sql")}, files...) {
		sql, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// The simple protocol runs a multi-statement file in one round trip.
		if _, err := c.Conn.Exec(ctx, string(sql), pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("pgtest: load %s: %v", filepath.Base(f), err)
		}
	}
	return c
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Exec runs sql and fails the test on error.
func (c *Cluster) Exec(sql string, args ...any) {
	c.t.Helper()
	if _, err := c.Conn.Exec(context.Background(), sql, args...); err != nil {
		c.t.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// Call runs SELECT queen.<fn>(args...)::text with each argument as jsonb (maps, slices) or
// text, and decodes the JSON answer into out (nil to discard).
func (c *Cluster) Call(out any, fn string, args ...any) {
	c.t.Helper()
	ph := make([]string, len(args))
	vals := make([]any, len(args))
	for i, a := range args {
		switch a.(type) {
		case string:
			ph[i], vals[i] = fmt.Sprintf("$%d::text", i+1), a
		default:
			b, err := json.Marshal(a)
			if err != nil {
				c.t.Fatal(err)
			}
			ph[i], vals[i] = fmt.Sprintf("$%d::jsonb", i+1), string(b)
		}
	}
	var s *string
	q := fmt.Sprintf("SELECT queen.%s(%s)::text", fn, strings.Join(ph, ", "))
	if err := c.Conn.QueryRow(context.Background(), q, vals...).Scan(&s); err != nil {
		c.t.Fatalf("pgtest: queen.%s: %v", fn, err)
	}
	if out != nil && s != nil {
		if err := json.Unmarshal([]byte(*s), out); err != nil {
			c.t.Fatalf("pgtest: queen.%s answer %q: %v", fn, *s, err)
		}
	}
}

// Message is one message of a pop's answer (the fields the tests use).
type Message struct {
	ID            string `json:"id"`
	TransactionID string `json:"transactionId"`
	PartitionID   string `json:"partitionId"`
}

// Configure calls queen.configure_queue_v1 with options in the API's camelCase.
func (c *Cluster) Configure(queue string, opts map[string]any) {
	c.Call(nil, "configure_queue_v1", queue, opts)
}

// Push calls queen.push_messages_v2 with items {"queue","partition","transactionId","payload",...}.
func (c *Cluster) Push(items []map[string]any) { c.Call(nil, "push_messages_v2", items) }

// Pop calls queen.pop_unified_batch_v4 for one targeted (partition, group) with lease as the
// leaseId and returns the messages leased.
func (c *Cluster) Pop(queue, partition, group string, batch int, lease string) []Message {
	c.t.Helper()
	var res []struct {
		Result struct {
			Messages []Message `json:"messages"`
		} `json:"result"`
	}
	c.Call(&res, "pop_unified_batch_v4", []map[string]any{{"idx": 0, "queue_name": queue, "partition_name": partition,
		"consumer_group": group, "batch_size": batch, "worker_id": lease, "sub_mode": "all"}})
	if len(res) == 0 {
		return nil
	}
	return res[0].Result.Messages
}

// Ack calls queen.ack_messages_v2 for msgs with status ("completed", "failed") and error text.
func (c *Cluster) Ack(msgs []Message, group, lease, status, errText string) {
	items := make([]map[string]any, len(msgs))
	for i, m := range msgs {
		items[i] = map[string]any{"index": i, "transactionId": m.TransactionID, "partitionId": m.PartitionID,
			"consumerGroup": group, "leaseId": lease, "status": status, "error": errText}
	}
	c.Call(nil, "ack_messages_v2", items)
}
