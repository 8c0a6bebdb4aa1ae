package frontend

import (
	"testing"
	"unsafe"
)

// sessionSizeClass is the Go allocator's size class a Session is
// allocated in: every idle client costs it. The next class down is 1,536
// bytes, the next up 2,048.
const sessionSizeClass = 1792

// TestSessionSize keeps the Session within its size class. A field added
// beyond it costs every idle client 256 bytes (issue 23: 10,000 idle
// clients of go-sql-driver cost the proxy 8.6 KB each when the Session
// was 6 KB). Make room by moving what only a busy session needs into what
// it takes and sheds (shed.go), or by putting small fields side by side.
func TestSessionSize(t *testing.T) {
	if size := unsafe.Sizeof(Session{}); size > sessionSizeClass {
		t.Fatalf("Session is %d bytes, over the %d-byte size class idle sessions are held in", size, sessionSizeClass)
	}
}
