//go:build !wasip1

package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/prepkey/prepkey/backend"
	"github.com/prepkey/prepkey/backend/disk"
	"github.com/prepkey/prepkey/backend/mongo"
	"github.com/prepkey/prepkey/backend/redis"
	"github.com/prepkey/prepkey/backend/redis/loopconn"
)

// defaultListen is --listen's default: loopback only.
const defaultListen = "127.0.0.1:6380"

// openFile opens the embedded store.
func openFile(dir string, opts backend.Options, cacheBytes, minFree int64) (opened, error) {
	s, err := disk.OpenTuned(dir, opts, disk.Tuning{CacheBytes: cacheBytes, MinFreeBytes: minFree})
	if err != nil {
		return opened{}, err
	}
	return opened{store: s}, nil
}

// openRedis opens a Redis store: a standalone Redis, or one behind
// Sentinel, on a Cluster or over TLS (backend/redis).
func openRedis(ctx context.Context, c config, opts backend.Options, log *slog.Logger) (opened, error) {
	s, err := redis.Open(ctx, c.backendURL, redis.Config{Options: opts, KeyPrefix: c.redisKeyPrefix, Timeout: c.backendTimeout, Logger: log})
	if err != nil {
		return opened{}, err
	}
	if w := s.Wire(); w != nil {
		// The store writes each loop's submissions on a connection of
		// its own to that loop (loopconn.Loops, made per loop on its first
		// submission); the server gives them its counters (serveLoops).
		loops := loopconn.NewLoops(w, loopconn.Options{Timeout: s.Info().Deadline(c.backendTimeout), Logger: log})
		s.UseLoopConns(loops)
		return opened{store: s, serveLoops: loops.Serve}, nil
	}
	return opened{store: s}, nil
}

// openMongo opens a MongoDB store.
func openMongo(ctx context.Context, c config, opts backend.Options, log *slog.Logger) (opened, error) {
	s, err := mongo.Open(ctx, c.backendURL, mongo.Config{Options: opts, Timeout: c.backendTimeout, Logger: log})
	if err != nil {
		return opened{}, err
	}
	return opened{store: s}, nil
}

// netListen opens a listening socket.
func netListen(network, addr string) (net.Listener, error) { return net.Listen(network, addr) }

// inheritedSocket is fd:auto's descriptor: the first socket a service
// manager passed, as systemd does (LISTEN_FDS, for this LISTEN_PID).
func inheritedSocket() (int, error) {
	n, _ := strconv.Atoi(os.Getenv("LISTEN_FDS"))
	pid, _ := strconv.Atoi(os.Getenv("LISTEN_PID"))
	if n < 1 || pid != os.Getpid() {
		return 0, errors.New("fd:auto: no socket was passed (LISTEN_FDS and LISTEN_PID unset or for another process)")
	}
	return 3, nil // SD_LISTEN_FDS_START
}

// checkListening refuses a socket that does not listen (a connected one, or
// one bound but not listening): Accept would fail on it only later.
func checkListening(ln net.Listener) error {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var accepts int
	var serr error
	if err := rc.Control(func(fd uintptr) {
		accepts, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_ACCEPTCONN)
	}); err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	if accepts == 0 {
		return errors.New("it does not listen")
	}
	return nil
}

// signalContext ends at SIGTERM or SIGINT.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
}
