// Command go-redis uses prepkey from Go with a stock go-redis client (not
// this module's helper), in RESP2 and RESP3: the Go one of the examples in
// clients/ (other languages), kept here so that everything Go is under
// client/ (issue 33, item 5).
//
// Run by clients/run.sh (the suite "go") against a sidecar started with --requirepass; it
// reads PREPKEY_HOST, PREPKEY_PORT and PREPKEY_PASSWORD. Exits non-zero if
// any check fails.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var passed, failed int

func check(what string, got, want any) {
	if reflect.DeepEqual(got, want) {
		passed++
		return
	}
	failed++
	fmt.Printf("FAIL %s: got %#v, want %#v\n", what, got, want)
}

// errText is the reply error's text, or "" when there is none.
func errText(err error) string {
	var re redis.Error
	if errors.As(err, &re) {
		return re.Error()
	}
	if err != nil {
		return "not a reply error: " + err.Error()
	}
	return ""
}

func main() {
	addr := os.Getenv("PREPKEY_HOST") + ":" + os.Getenv("PREPKEY_PORT")
	password := os.Getenv("PREPKEY_PASSWORD")
	ctx := context.Background()

	// AUTH: a wrong password is refused.
	bad := redis.NewClient(&redis.Options{Addr: addr, Password: "wrong", MaxRetries: -1})
	check("wrong password", errText(bad.Ping(ctx).Err()), "WRONGPASS invalid username-password pair or user is disabled.")
	bad.Close()

	for _, proto := range []int{2, 3} {
		rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password, Protocol: proto})
		run(ctx, rdb, fmt.Sprintf("username-go%d", proto))
		rdb.Close()
	}
	fmt.Printf("go (go-redis %s): %d passed, %d failed\n", redis.Version(), passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}

func run(ctx context.Context, rdb *redis.Client, ns string) {
	pk := func(args ...any) *redis.Cmd { return rdb.Do(ctx, args...) }
	int64Of := func(c *redis.Cmd) any {
		n, err := c.Int64()
		if err != nil {
			return err.Error()
		}
		return n
	}

	// Sign-up: reserve the username before emitting the event.
	user := `{"userId":"42"}`
	check("sign-up", int64Of(pk("PK.PREPARE", ns, "alice", user, "EX", 300)), int64(1))
	check("taken", int64Of(pk("PK.PREPARE", ns, "alice", `{"userId":"7"}`)), int64(0))
	got, _ := pk("PK.GET", ns, "alice").Text()
	check("get", got, user)
	// Username change: alice -> alice2 in one step.
	check("change", int64Of(pk("PK.REPREPARE", ns, "alice2", user, "FROM", "alice", "IFEQ", user)), int64(1))
	check("old name free", pk("PK.GET", ns, "alice").Err(), redis.Nil)
	// Release.
	check("release", int64Of(pk("PK.ROLLBACK", ns, "alice2", "IFEQ", user)), int64(1))

	// Binary keys and values, byte for byte.
	value := make([]byte, 256)
	for i := range value {
		value[i] = byte(i)
	}
	key := "\x00\xff\r\nk"
	check("binary prepare", int64Of(pk("PK.PREPARE", ns, key, value)), int64(1))
	got, _ = pk("PK.GET", ns, key).Text()
	check("binary get", got, string(value))

	// TTL: the reservation expires; PK.GETVALUE still shows it (retained).
	check("ttl prepare", int64Of(pk("PK.PREPARE", ns, "ttl", "v", "PX", 200)), int64(1))
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if pk("PK.GET", ns, "ttl").Err() == redis.Nil {
			break
		}
	}
	check("expired", pk("PK.GET", ns, "ttl").Err(), redis.Nil)
	rec, _ := pk("PK.GETVALUE", ns, "ttl").Slice()
	check("expired record retained", len(rec) == 2 && rec[0] == "v" && rec[1].(int64) <= time.Now().UnixMilli(), true)
	check("expired key reserved again", int64Of(pk("PK.PREPARE", ns, "ttl", "v2")), int64(1))

	// A pipeline of 100 commands, answered in order.
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range 100 {
			p.Do(ctx, "PK.PREPARE", ns, fmt.Sprint("p", i), fmt.Sprint("v", i))
		}
		return nil
	})
	check("pipeline error", err, nil)
	ones := 0
	for _, c := range cmds {
		if n, _ := c.(*redis.Cmd).Int64(); n == 1 {
			ones++
		}
	}
	check("pipeline", ones, 100)

	// A transaction: MULTI/EXEC.
	cmds, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "PK.PREPARE", ns, "tx-user", "v")
		p.Do(ctx, "PK.PREPARE", ns, "tx-email", "v")
		return nil
	})
	check("transaction error", err, nil)
	check("transaction", len(cmds) == 2 && int64Of(cmds[0].(*redis.Cmd)) == int64(1) && int64Of(cmds[1].(*redis.Cmd)) == int64(1), true)
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "PK.PREPARE", ns, "tx-other", "v")
		p.Do(ctx, "PK.PREPARE", ns, "tx-other2", "v", "EX") // refused: syntax
		return nil
	})
	check("execabort", errText(err), "EXECABORT Transaction discarded because of previous errors.")
	check("aborted block stored nothing", pk("PK.GET", ns, "tx-other").Err(), redis.Nil)

	// Errors: Redis's words, as redis.Error.
	check("syntax", errText(pk("PK.PREPARE", ns, "k", "v", "EX").Err()), "ERR syntax error")
	check("arity", errText(pk("PK.GET", ns).Err()), "ERR wrong number of arguments for 'pk.get' command")
	mismatch := errText(pk("PK.REPREPARE", ns, "new", "v", "FROM", "nobody", "IFEQ", "v").Err())
	check("mismatch", strings.HasPrefix(mismatch, "MISMATCH "), true)
}
