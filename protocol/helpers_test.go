package protocol

import (
	"strconv"
	"strings"
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

// batchDrivers is each loop's batch driver (a wire driver's own included).
func batchDrivers(srv *Server) []*batchDriver {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	var ds []*batchDriver
	for _, d := range srv.drivers {
		switch d := d.(type) {
		case *batchDriver:
			ds = append(ds, d)
		case *wireDriver:
			ds = append(ds, d.batchDriver)
		}
	}
	return ds
}

// wireDrivers is each loop's wire driver.
func wireDrivers(srv *Server) []*wireDriver {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	var ds []*wireDriver
	for _, d := range srv.drivers {
		if w, ok := d.(*wireDriver); ok {
			ds = append(ds, w)
		}
	}
	return ds
}
