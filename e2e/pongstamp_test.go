package e2e

import (
	"bytes"
	"errors"
	"net"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// stampedConn reads a TCP connection with the kernel's receive time of
// what it reads (SO_TIMESTAMPNS): the time a reply reached the client's
// socket, not the time the client's goroutine got to read it. On a loaded
// machine the latter adds the test process's own wait for a core (a PONG
// the sidecar wrote within 0.6 ms of the PING was read 68 ms later).
type stampedConn struct {
	raw interface {
		Read(func(fd uintptr) bool) error
	}
	buf []byte
	at  time.Time // kernel receive time of the last bytes read into buf
}

func newStampedConn(nc net.Conn) (*stampedConn, error) {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil, errors.New("not a TCP connection")
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return nil, err
	}
	return &stampedConn{raw: raw}, serr
}

// readLine reads up to and including the next "\n" (within the conn's
// read deadline) and returns it with the kernel's receive time of its end.
func (s *stampedConn) readLine() (string, time.Time, error) {
	for {
		if i := bytes.IndexByte(s.buf, '\n'); i >= 0 {
			line := string(s.buf[:i+1])
			s.buf = s.buf[i+1:]
			return line, s.at, nil
		}
		var (
			p       [512]byte
			oob     [128]byte
			n, oobn int
			readErr error
		)
		err := s.raw.Read(func(fd uintptr) bool {
			n, oobn, _, _, readErr = unix.Recvmsg(int(fd), p[:], oob[:], 0)
			return readErr != unix.EAGAIN
		})
		if err == nil {
			err = readErr
		}
		if err == nil && n == 0 {
			err = errors.New("connection closed")
		}
		if err != nil {
			return "", time.Time{}, err
		}
		s.buf = append(s.buf, p[:n]...)
		s.at = time.Now() // when the kernel gives no stamp
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		for _, m := range msgs {
			if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SCM_TIMESTAMPNS && len(m.Data) >= int(unsafe.Sizeof(unix.Timespec{})) {
				ts := (*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
				s.at = time.Unix(ts.Unix())
			}
		}
	}
}
