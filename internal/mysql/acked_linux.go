package mysql

import "golang.org/x/sys/unix"

// peerAckedBytes returns how many bytes written to the socket the peer's TCP
// stack has acknowledged (tcpi_bytes_acked, Linux 4.1+).
func peerAckedBytes(fd uintptr) (uint64, bool) {
	info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return 0, false
	}
	return info.Bytes_acked, true
}
