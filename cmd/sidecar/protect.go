package main

import (
	"fmt"
	"net"
	"strings"
)

// Protected mode, as Redis's protected-mode: a sidecar that other hosts
// can reach must ask for a password. Listening on 0.0.0.0, on a pod's or a
// host's address, or on any address other than loopback, without
// --requirepass is refused at start unless --protected-mode no says that
// something else (a network policy, a firewall) keeps strangers out.
// Unix sockets are local; an inherited socket is judged by its address.

// errExposed is the one line a refused start prints.
func errExposed(listen string) error {
	return fmt.Errorf("--listen %s accepts connections from other hosts and no password is set: set --requirepass (or --requirepass-file, PK_REQUIREPASS), or --protected-mode no to allow it", listen)
}

// checkProtectedListen refuses, before anything is opened, a --listen
// whose host is a literal address other than loopback (or empty: every
// interface). Host names are judged once listening (checkProtectedAddr).
func (c config) checkProtectedListen() error {
	if c.protectedMode == "no" || c.requirePass != "" ||
		strings.HasPrefix(c.listen, "unix:") || strings.HasPrefix(c.listen, "fd:") {
		return nil
	}
	host, _, err := net.SplitHostPort(c.listen)
	if err != nil {
		return nil // listen reports it
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && !ip.IsLoopback() {
		return errExposed(c.listen)
	}
	return nil
}

// checkProtectedAddr refuses a listener whose address is not loopback (a
// host name that resolved to another address, an inherited TCP socket).
// An address of another kind (a unix socket, wasip1's preopened socket,
// which tells none) is let through.
func (c config) checkProtectedAddr(a net.Addr) error {
	if c.protectedMode == "no" || c.requirePass != "" {
		return nil
	}
	if ta, ok := a.(*net.TCPAddr); ok && !ta.IP.IsLoopback() {
		return errExposed(c.listen)
	}
	return nil
}
