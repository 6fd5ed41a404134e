package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/prepkey/prepkey/client"
)

// The README's example, compiled here (not run: it needs a sidecar on
// 127.0.0.1:6380).
func Example() {
	ctx := context.Background()
	pk := client.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6380"}))
	err := pk.UsingPrepare(ctx, "username", "alice", []byte(`{"userId":"42"}`),
		func(ctx context.Context, prepared bool) error {
			if !prepared {
				return errors.New("alice is taken")
			}
			return signUp(ctx) // an error here releases "alice" (ROLLBACK ... IFEQ)
		}, client.TTL(10*time.Minute))
	if errors.Is(err, client.ErrUnavailable) { // outcome unknown: look before retrying
		rec, held, _ := pk.GetValue(ctx, "username", "alice")
		fmt.Println(held, string(rec.Value))
	}
}

func signUp(context.Context) error { return nil }

func ExampleClient_Scan() {
	ctx := context.Background()
	pk := client.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6380"}))
	for rec, err := range pk.Scan(ctx, "username", client.ScanExpired(), client.ScanCount(100)) {
		if err != nil {
			fmt.Println(err)
			break
		}
		fmt.Println(rec.Key, string(rec.Value), rec.ExpiresAt)
	}
}

func ExampleClient_ChangeKey() {
	ctx := context.Background()
	pk := client.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6380"}))
	v := []byte(`{"userId":"42"}`)
	moved, err := pk.ChangeKey(ctx, "username", "alice", v, "alice2", v)
	switch {
	case errors.Is(err, client.ErrMismatch):
		fmt.Println("alice is not held by user 42")
	case err != nil:
		fmt.Println("unknown outcome:", err)
	case !moved:
		fmt.Println("alice2 is taken")
	}
}

// User mirrors the Kotlin data class Wow writes: the same field order, the
// same JSON names.
type User struct {
	CommandID string `json:"commandId"` // identifies the writer: see UsingPrepare
	UserID    string `json:"userId"`
}

func ExampleNewKey() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6380"}) // go-redis defaults: safe for UsingPrepare
	defer rdb.Close()                                              // yours to close: the helper never does
	usernames := client.NewKey[User](client.New(rdb), "username", nil)

	err := usernames.UsingPrepare(ctx, "alice", User{CommandID: "cmd-7f3a", UserID: "42"},
		func(ctx context.Context, prepared bool) error {
			if !prepared {
				return errors.New("alice is taken")
			}
			return signUp(ctx) // an error here releases "alice" (ROLLBACK ... IFEQ)
		}, client.TTL(10*time.Minute))
	if client.OutcomeUnknown(err) { // the prepare or the rollback may have happened
		rec, held, _ := usernames.GetValue(ctx, "alice")
		fmt.Println(held, rec.Value.UserID)
	}
}

func ExampleOutcomeUnknown() {
	ctx := context.Background()
	pk := client.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6380", MaxRetries: -1}))
	v := []byte(`{"commandId":"cmd-7f3a","userId":"42"}`)
	ok, err := pk.Prepare(ctx, "username", "alice", v)
	switch {
	case client.OutcomeUnknown(err): // -UNAVAILABLE, connection lost, timeout: look
		rec, held, err := pk.GetValue(ctx, "username", "alice")
		fmt.Println(err == nil && held && rec.Live(time.Now()) && bytes.Equal(rec.Value, v))
	case err != nil: // known: nothing changed
		fmt.Println(err)
	default:
		fmt.Println(ok)
	}
}
