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

// batchGauges is the gauges of each loop's driver that batches (a wire
// driver's included), each read on its loop.
func batchGauges(srv *Server) []scheduler.Gauge { return srv.drivers.Gauges() }

// wireGauges is the gauges of each loop's wire driver.
func wireGauges(srv *Server) []scheduler.Gauge {
	var gs []scheduler.Gauge
	for _, g := range srv.drivers.Gauges() {
		if g.Wire {
			gs = append(gs, g)
		}
	}
	return gs
}
