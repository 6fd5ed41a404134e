package client_test

import (
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
