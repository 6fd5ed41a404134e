package redis

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"
)

// TestConfigDial: every connection is opened by Config.Dial when it is set
// (the WebAssembly build's dialer), the rueidis client's and Wire's alike,
// to the URL's address. No server is needed: the dialer refuses.
func TestConfigDial(t *testing.T) {
	refused := errors.New("refused by the test's dialer")
	addrs := make(chan string, 16)
	dial := func(_ context.Context, addr string) (net.Conn, error) {
		addrs <- addr
		return nil, refused
	}
	s, err := Open(context.Background(), "redis://192.0.2.1:7000", Config{Timeout: time.Second, Dial: dial})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Ping(context.Background()); !errors.Is(err, refused) {
		t.Fatalf("Ping: %v, want the dialer's error", err)
	}
	if got := <-addrs; got != "192.0.2.1:7000" {
		t.Fatalf("the client dialled %q", got)
	}
	if _, err := s.Wire().Dial(context.Background()); !errors.Is(err, refused) {
		t.Fatalf("Wire.Dial: %v, want the dialer's error", err)
	}
}
