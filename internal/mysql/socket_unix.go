//go:build unix

package mysql

import (
	"syscall"
	"unsafe"
)

const rawIOSupported = true

// rawRead is read(2) without the runtime's syscall hooks (see socket). The
// descriptor is non-blocking, so it returns at once.
func rawRead(fd uintptr, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	n, _, errno := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), 0
}

// peekInput tells what the non-blocking socket fd has to read, without
// consuming it: a one-byte MSG_PEEK read, which reads 0 bytes at the end
// of the input (the peer's FIN).
func peekInput(fd uintptr) int {
	var b [1]byte
	n, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1,
		syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	switch {
	case errno == 0 && n == 0:
		return inputClosed
	case errno == 0:
		return inputData
	case errno == syscall.EAGAIN || errno == syscall.EINTR:
		return inputNone
	}
	return inputClosed // reset, or another error: nothing will come
}

// rawWrite is write(2) without the runtime's syscall hooks.
func rawWrite(fd uintptr, b []byte) (int, syscall.Errno) {
	if len(b) == 0 {
		return 0, 0
	}
	n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), 0
}
