package mysql_test

import (
	"net"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
)

// TestDrainStopsAtPartialFrame: Drain(false) drops the rows already
// buffered and stops at a row only partly there, without reading the
// connection: a merge then interrupts the part rather than read the rest
// of its result, however much the server has sent meanwhile. Drain(true)
// reads the rest.
func TestDrainStopsAtPartialFrame(t *testing.T) {
	var seq byte
	frame := func(payload []byte) []byte {
		n := len(payload)
		f := append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
		seq++
		return f
	}
	var first []byte
	first = append(first, frame([]byte{1})...) // one column
	first = append(first, frame(mysql.AppendColumnDef(nil, &mysql.Column{Name: "v", Type: mysql.TypeVarString}))...)
	row := append([]byte{20}, "twenty bytes of data"...)
	first = append(first, frame(row)...)
	first = append(first, frame(row)...)
	third := frame(row)
	first = append(first, third[:10]...) // the third row's header and part of its body
	rest := append(third[10:], frame(mysql.AppendOK(nil, mysql.HeaderEOF, &mysql.OKPacket{Status: mysql.StatusAutocommit}, mysql.ClientDeprecateEOF))...)

	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	sendRest := make(chan struct{})
	go func() {
		// One write: the reader's first read buffers all of it.
		if _, err := b.Write(first); err != nil {
			return
		}
		<-sendRest
		_, _ = b.Write(rest)
	}()
	s := &mysql.RowStream{Backend: mysql.NewConn(a), BackendCaps: mysql.ClientDeprecateEOF}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	drained := make(chan error, 1)
	var done bool
	go func() {
		var err error
		done, err = s.Drain(false)
		drained <- err
	}()
	select {
	case err := <-drained:
		if err != nil || done {
			t.Fatalf("Drain(false): done %v, %v; want it stopped before the partial row", done, err)
		}
	case <-time.After(10 * time.Second):
		close(sendRest) // lets the blocked read end
		<-drained
		t.Fatal("Drain(false) read the connection for a row only partly buffered")
	}
	if s.Info.Rows != 2 {
		t.Fatalf("Drain(false) dropped %d rows, want the 2 wholly buffered", s.Info.Rows)
	}
	close(sendRest)
	if done, err := s.Drain(true); err != nil || !done || s.Info.Rows != 3 {
		t.Fatalf("Drain(true): done %v, %v, %d rows; want the end after 3", done, err, s.Info.Rows)
	}
}
