package mysql_test

import (
	"bytes"
	"net"
	"os"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/mysql/auth"
	"github.com/shardgate/shardgate/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// baseCaps are what the test clients ask of the server before the flags a
// test varies (DEPRECATE_EOF, FOUND_ROWS, SESSION_TRACK).
const baseCaps = mysql.ClientLongPassword | mysql.ClientLongFlag | mysql.ClientProtocol41 |
	mysql.ClientTransactions | mysql.ClientSecureConnection | mysql.ClientMultiResults |
	mysql.ClientPSMultiResults | mysql.ClientPluginAuth | mysql.ClientConnectWithDB

// serverConn is a raw client connection to a real server, logged in with
// exactly the capabilities a test chooses, so the test sees the packets a
// server sends a client with those flags.
type serverConn struct {
	*mysql.Conn
	caps uint32
}

// dialServer logs in to srv's database db as the test account with extra
// capability flags on top of baseCaps.
func dialServer(t *testing.T, srv *testenv.Server, db string, extra uint32) *serverConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", srv.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	c := mysql.NewConn(nc)
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatalf("greeting: %v", err)
	}
	g, err := mysql.ParseGreeting(p)
	if err != nil {
		t.Fatal(err)
	}
	caps := (baseCaps | extra) & g.Capabilities
	if db == "" {
		caps &^= mysql.ClientConnectWithDB
	}
	hr := &mysql.HandshakeResponse{
		Capabilities: caps, MaxPacket: 1 << 30, Charset: mysql.CollationUTF8MB4GeneralCI,
		User: srv.User, Database: db, AuthPlugin: auth.PluginNative,
		AuthResponse: auth.NativeScramble([]byte(srv.Password), g.AuthData[:auth.ScrambleLen]),
	}
	if err := c.EndPacket(mysql.AppendHandshakeResponse(c.BeginPacket(), hr)); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if p, err = c.ReadPacket(); err != nil || !mysql.IsOK(p) {
		t.Fatalf("login: %v %q", err, p)
	}
	return &serverConn{Conn: c, caps: caps}
}

// send starts a command.
func (c *serverConn) send(t *testing.T, cmd byte, arg []byte) {
	t.Helper()
	c.ResetSeq()
	if err := c.WritePacket(append([]byte{cmd}, arg...)); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
}

// exec runs statements and fails the test on any error.
func (c *serverConn) exec(t *testing.T, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if p := c.single(t, s); mysql.IsErr(p) {
			t.Fatalf("%s: %v", s, mysql.ParseErr(p))
		}
	}
}

// single runs a statement whose answer is one packet (OK or ERR) and
// returns a copy of it.
func (c *serverConn) single(t *testing.T, sql string) []byte {
	t.Helper()
	c.send(t, mysql.ComQuery, []byte(sql))
	p, err := c.ReadPacket()
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if !mysql.IsOK(p) && !mysql.IsErr(p) {
		t.Fatalf("%s: not an OK or ERR: %q", sql, p)
	}
	return append([]byte(nil), p...)
}

// bufConn is a client end that collects what the proxy writes to it.
type bufConn struct {
	net.Conn // nil: only Write and the deadlines are used
	out      bytes.Buffer
}

func (c *bufConn) Write(p []byte) (int, error)      { return c.out.Write(p) }
func (c *bufConn) SetWriteDeadline(time.Time) error { return nil }
func (c *bufConn) SetReadDeadline(time.Time) error  { return nil }

// frame is one physical packet as it crossed the wire.
type frame struct {
	seq     byte
	payload []byte
}

// splitFrames splits a byte stream into frames.
func splitFrames(t *testing.T, b []byte) []frame {
	t.Helper()
	var out []frame
	for len(b) > 0 {
		if len(b) < 4 {
			t.Fatalf("stream ends in a partial header")
		}
		n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
		if len(b)-4 < n {
			t.Fatalf("stream ends in a partial frame")
		}
		out = append(out, frame{seq: b[3], payload: b[4 : 4+n]})
		b = b[4+n:]
	}
	return out
}

// readFrame reads one frame as the server sent it.
func (c *serverConn) readFrame(t *testing.T) (frame, bool) {
	t.Helper()
	p, more, err := c.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	return frame{seq: c.Seq() - 1, payload: append([]byte(nil), p...)}, more
}

// readPacketFrames reads the frames of one logical packet.
func (c *serverConn) readPacketFrames(t *testing.T) []frame {
	t.Helper()
	f, more := c.readFrame(t)
	fs := []frame{f}
	for more {
		f, more = c.readFrame(t)
		fs = append(fs, f)
	}
	return fs
}

// readResultSet reads a whole result set (or a lone ERR) as frames.
func (c *serverConn) readResultSet(t *testing.T) []frame {
	t.Helper()
	fs := c.readPacketFrames(t)
	if mysql.IsErr(fs[0].payload) {
		return fs
	}
	cols, _, _, ok := mysql.ReadLenEncInt(fs[0].payload)
	if !ok {
		t.Fatalf("not a result set: %q", fs[0].payload)
	}
	for i := uint64(0); i < cols; i++ {
		fs = append(fs, c.readPacketFrames(t)...)
	}
	if c.caps&mysql.ClientDeprecateEOF == 0 {
		fs = append(fs, c.readPacketFrames(t)...)
	}
	for {
		p := c.readPacketFrames(t)
		fs = append(fs, p...)
		if len(p) == 1 && (mysql.IsErr(p[0].payload) || mysql.IsEOF(p[0].payload)) {
			return fs
		}
	}
}

// prepare prepares sql and reads the whole response, returning the
// statement id.
func (c *serverConn) prepare(t *testing.T, sql string) uint32 {
	t.Helper()
	c.send(t, mysql.ComStmtPrepare, []byte(sql))
	p, err := c.ReadPacket()
	if err != nil || len(p) < 12 || p[0] != mysql.HeaderOK {
		t.Fatalf("prepare %s: %v %q", sql, err, p)
	}
	id := uint32(p[1]) | uint32(p[2])<<8 | uint32(p[3])<<16 | uint32(p[4])<<24
	cols, params := int(p[5])|int(p[6])<<8, int(p[7])|int(p[8])<<8
	for _, n := range []int{params, cols} {
		if n == 0 {
			continue
		}
		for i := 0; i < n; i++ {
			if _, err := c.ReadPacket(); err != nil {
				t.Fatal(err)
			}
		}
		if c.caps&mysql.ClientDeprecateEOF == 0 {
			if _, err := c.ReadPacket(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return id
}

// execute sends COM_STMT_EXECUTE for a statement with one BIGINT parameter.
func (c *serverConn) execute(t *testing.T, id uint32, param int64) {
	t.Helper()
	b := []byte{byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24), 0, 1, 0, 0, 0, 0, 1, mysql.TypeLongLong, 0}
	for i := 0; i < 8; i++ {
		b = append(b, byte(param>>(8*i)))
	}
	c.send(t, mysql.ComStmtExecute, b)
}
