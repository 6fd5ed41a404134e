package protocol

import (
	"strconv"
	"strings"

	"github.com/prepkey/prepkey/protocol/scheduler"
)

// req is one request in RESP, as a client sends it.
func req(args ...string) string {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.String()
}

// batchGauges is the gauges of each loop's scheduling, each read on its
// loop.
func batchGauges(srv *Server) []scheduler.Gauge { return srv.sched.Gauges() }
