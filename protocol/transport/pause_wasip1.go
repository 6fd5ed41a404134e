//go:build wasip1

package transport

// PausesReading: no epoll; the portable transport stops reading a
// connection itself (Served.Holding).
const PausesReading = false

// SetReading does nothing on wasip1 (see PausesReading).
func SetReading(int, IO, bool) error { return nil }
