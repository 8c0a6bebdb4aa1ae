package mysql

import (
	"syscall"
	"unsafe"
)

// socketReadable peeks one byte without blocking: true when data, EOF or an
// error is waiting (the read that follows reports which), false when the
// socket would block.
func socketReadable(fd uintptr) bool {
	var b [1]byte
	_, _, errno := syscall.Syscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	return errno != syscall.EAGAIN && errno != syscall.EINTR
}
