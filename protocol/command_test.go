package protocol

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestClientListRace has connections on two loops rename themselves while
// others list them (run with -race: CLIENT LIST reads other loops'
// connections).
func TestClientListRace(t *testing.T) {
	addr := serve(t, Config{EventLoops: 2}, &echoHandler{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			rd := bufio.NewReader(nc)
			for j := range 50 {
				cmd := req("CLIENT", "SETNAME", fmt.Sprintf("c%d-%d", i, j))
				if j%2 == 1 {
					cmd = req("CLIENT", "LIST")
				}
				if _, err := nc.Write([]byte(cmd)); err != nil {
					t.Error(err)
					return
				}
				line, err := rd.ReadString('\n')
				if err != nil {
					t.Error(err)
					return
				}
				if j%2 == 1 {
					n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
					buf := make([]byte, n+2)
					if _, err := io.ReadFull(rd, buf); err != nil {
						t.Error(err)
						return
					}
					if !strings.Contains(string(buf), fmt.Sprintf(" name=c%d-%d ", i, j-1)) {
						t.Errorf("CLIENT LIST does not show this connection's name c%d-%d: %s", i, j-1, buf)
						return
					}
				} else if line != "+OK\r\n" {
					t.Errorf("SETNAME: %q", line)
					return
				}
			}
		}()
	}
	wg.Wait()
}
