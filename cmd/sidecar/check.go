package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// checkTimeout bounds --check: a healthcheck must answer.
const checkTimeout = 3 * time.Second

// runCheck is --check: it sends PING (after AUTH when a password is set) to
// the sidecar at --listen and returns 0 when it answers PONG, 1 with the
// reason on stderr otherwise. It lets a container image without a shell or
// redis-cli (distroless) have a healthcheck: `sidecar --check`, reading the
// same flags and PK_* variables as the sidecar it checks.
func runCheck(cfg config, stderr io.Writer) int {
	if err := pingSidecar(cfg.listen, cfg.requirePass); err != nil {
		fmt.Fprintf(stderr, "sidecar: check %s: %v\n", cfg.listen, err)
		return 1
	}
	return 0
}

func pingSidecar(listen, password string) error {
	network, addr := "tcp", listen
	if path, ok := strings.CutPrefix(listen, "unix:"); ok {
		network, addr = "unix", path
	} else if host, port, err := net.SplitHostPort(listen); err == nil {
		// A sidecar listening on every interface is reached on loopback.
		switch host {
		case "", "0.0.0.0":
			addr = net.JoinHostPort("127.0.0.1", port)
		case "::":
			addr = net.JoinHostPort("::1", port)
		}
	}
	nc, err := net.DialTimeout(network, addr, checkTimeout)
	if err != nil {
		return err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(checkTimeout))
	var req strings.Builder
	if password != "" {
		fmt.Fprintf(&req, "*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(password), password)
	}
	req.WriteString("*1\r\n$4\r\nPING\r\n")
	if _, err := io.WriteString(nc, req.String()); err != nil {
		return err
	}
	r := bufio.NewReader(nc)
	if password != "" {
		if line, err := readReplyLine(r); err != nil {
			return err
		} else if line != "+OK" {
			return fmt.Errorf("AUTH answered %q", line)
		}
	}
	line, err := readReplyLine(r)
	if err != nil {
		return err
	}
	if line != "+PONG" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

func readReplyLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("reading the reply: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}
