//go:build linux && !poll_opt

package transport

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEpollData reads an epoll's fdinfo as Linux prints it
// (fs/eventpoll.c, ep_show_fdinfo): the data for the descriptor asked
// about, not for another, and nothing for one it does not watch.
func TestEpollData(t *testing.T) {
	info := []byte("pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\n" +
		"tfd:        7 events:       19 data:                7  pos:0 ino:4d21 sdev:8\n" +
		"tfd:       12 events: 80000019 data:     7f3a5c001230  pos:0 ino:4d29 sdev:8\n")
	d, ok := epollData(info, 7)
	require.True(t, ok)
	require.Equal(t, uint64(7), d)
	d, ok = epollData(info, 12)
	require.True(t, ok)
	require.Equal(t, uint64(0x7f3a5c001230), d)
	_, ok = epollData(info, 1)
	require.False(t, ok)
}
