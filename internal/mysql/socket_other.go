//go:build !unix

package mysql

import "syscall"

// Elsewhere the connection does its I/O through net.Conn.
const rawIOSupported = false

func rawRead(uintptr, []byte) (int, syscall.Errno)  { return 0, syscall.EINVAL }
func rawWrite(uintptr, []byte) (int, syscall.Errno) { return 0, syscall.EINVAL }
func peekInput(uintptr) int                         { return inputData }
