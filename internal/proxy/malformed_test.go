package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/mysql/auth"
	"github.com/shardgate/shardgate/internal/proxy"
	"github.com/shardgate/shardgate/internal/testenv"
)

// TestMalformedClientsCloseOnlyThemselves sends the proxy garbage from many
// raw connections, before, during and after the handshake, while a healthy
// session runs queries: the garbage may close the connection it came on, and
// nothing else. A panic in a session goroutine would crash the test binary.
func TestMalformedClientsCloseOnlyThemselves(t *testing.T) {
	srv := testenv.Shared(t)
	cfg := proxyConfig(t, srv, "")
	// Dozens of the aborted handshakes fail to log in from 127.0.0.1; the
	// login failure delay (TestAuthFailureDelay) would hold the rest.
	cfg.Server.AuthFailureDelay.Threshold = 0
	p := startProxy(t, cfg)
	addr := p.Addrs()[0]
	rng := rand.New(rand.NewSource(20250611))

	// Session A: one healthy connection, busy for the whole test.
	dbA := openDB(t, proxyDSN(p, appUser, appPass, "", ""))
	dbA.SetMaxOpenConns(1)
	if got := queryString(t, dbA, "SELECT 1"); got != "1" {
		t.Fatalf("session A: SELECT 1 = %q", got)
	}
	baseline := mfClientsConnected(t, p)
	var (
		stop       atomic.Bool
		iterations atomic.Int64
		failures   atomic.Int64
		firstErr   atomic.Value
		loopDone   = make(chan struct{})
	)
	go func() {
		defer close(loopDone)
		for !stop.Load() {
			var n int
			err := dbA.QueryRowContext(context.Background(), "SELECT 1").Scan(&n)
			if err == nil && n != 1 {
				err = fmt.Errorf("SELECT 1 returned %d", n)
			}
			if err != nil {
				if failures.Add(1) == 1 {
					firstErr.Store(err)
				}
			}
			iterations.Add(1)
		}
	}()
	stopLoop := func() {
		if !stop.Swap(true) {
			<-loopDone
		}
	}
	t.Cleanup(stopLoop)

	t.Run("GarbageBeforeHandshakeResponse", func(t *testing.T) {
		for i := 0; i < 30; i++ {
			garbage := mfRandBytes(rng, 1+rng.Intn(600))
			readGreeting := i%3 != 0
			cl := mfDial(t, addr)
			if readGreeting {
				cl.mustGreeting(t)
			}
			cl.write(garbage)
			if !readGreeting {
				cl.mustGreeting(t) // sent before the proxy reads anything
			}
			cl.expectClosed(t, true)
		}
		// Framed, but not a HandshakeResponse41: refused with 1043.
		for _, payload := range [][]byte{
			{},                   // empty packet
			{0x05, 0xa2},         // too short for the capability flags
			mfRandBytes(rng, 40), // random, with CLIENT_PROTOCOL_41 cleared below
			append(binary.LittleEndian.AppendUint32(nil, mysql.ClientProtocol41|mysql.ClientSecureConnection), 0, 0, 0), // truncated after the flags
			append(binary.LittleEndian.AppendUint32(nil, mysql.ClientProtocol41|mysql.ClientPluginAuthLenencClientData),
				append(make([]byte, 28), "user\x00\xfe\xff\xff\xff\xff\xff\xff\xff\x7f"...)...), // auth data length beyond the packet
		} {
			if len(payload) == 40 {
				payload[1] &^= byte(mysql.ClientProtocol41 >> 8)
			}
			cl := mfDial(t, addr)
			cl.mustGreeting(t)
			cl.writePacket(1, payload)
			e := cl.expectErr(t)
			if e.Code != mysql.ERHandshake || e.State != mysql.StateConnFailure {
				t.Errorf("handshake response %x: got %v, want ERR %d (%s)", payload, e, mysql.ERHandshake, mysql.StateConnFailure)
			}
			cl.expectClosed(t, false)
		}
	})

	t.Run("HugeHeaderThenClose", func(t *testing.T) {
		// Before the handshake response: a header announcing a 16 MB frame,
		// with none or part of it, then close (or half-close).
		for _, tail := range []int{0, 1, 64 << 10} {
			for _, half := range []bool{false, true} {
				cl := mfDial(t, addr)
				cl.mustGreeting(t)
				cl.write(append([]byte{0xff, 0xff, 0xff, 1}, make([]byte, tail)...))
				if half {
					cl.expectClosed(t, true)
				} else {
					cl.close()
				}
			}
		}
		// The same as a command after a good login.
		for _, tail := range []int{0, 1000} {
			cl := mfDial(t, addr)
			cl.mustLogin(t)
			cl.write(append([]byte{0xff, 0xff, 0xff, 0}, make([]byte, tail)...))
			cl.close()
		}
	})

	t.Run("GarbageCommands", func(t *testing.T) {
		t.Run("EmptyPacket", func(t *testing.T) {
			// The server takes an empty packet for COM_SLEEP: "Unknown
			// command", and the connection stays.
			want, wantSeq := mfEmptyCommand(t, srv.Addr)
			got, gotSeq := mfEmptyCommand(t, addr)
			if !bytes.Equal(got, want) || gotSeq != wantSeq {
				t.Errorf("empty command: proxy answered %q (sequence id %d), server %q (sequence id %d)", got, gotSeq, want, wantSeq)
			}
		})

		t.Run("SequenceOutOfOrder", func(t *testing.T) {
			for _, seq := range []byte{1, 5, 255} {
				cl := mfDial(t, addr)
				cl.mustLogin(t)
				cl.writePacket(seq, append([]byte{mysql.ComQuery}, "SELECT 1"...))
				// A server may refuse the command (ER_NET_PACKETS_OUT_OF_ORDER)
				// and close, or answer it; either way only this connection
				// is affected, and if it stays open it must stay usable.
				res, err := cl.readResult()
				switch {
				case err != nil:
					cl.expectClosedAfter(t, err)
				case res.err != nil:
					t.Logf("seq %d: %v", seq, res.err)
					cl.expectClosed(t, false)
				default:
					t.Logf("seq %d: answered, first response sequence id %d", seq, res.firstSeq)
					cl.mustSelect1(t)
					cl.close()
				}
			}
		})

		t.Run("UnknownCommand", func(t *testing.T) {
			cl := mfDial(t, addr)
			cl.mustLogin(t)
			cmds := [][]byte{{0x7f}}
			for i := 0; i < 20; i++ {
				cmds = append(cmds, append([]byte{byte(0x20 + rng.Intn(0xe0))}, mfRandBytes(rng, rng.Intn(64))...))
			}
			for _, cmd := range cmds {
				cl.writePacket(0, cmd)
				e := cl.expectErr(t)
				if e.Code != mysql.ERUnknownCom || e.State != mysql.StateConnFailure {
					t.Errorf("command 0x%02x: got %v, want ERR %d (%s)", cmd[0], e, mysql.ERUnknownCom, mysql.StateConnFailure)
				}
				cl.mustSelect1(t)
			}
			cl.close()
		})

		t.Run("StmtExecute", func(t *testing.T) {
			cl := mfDial(t, addr)
			cl.mustLogin(t)
			id, params := cl.mustPrepare(t, "SELECT ? + 1")
			if params != 1 {
				t.Fatalf("prepare: %d parameters, want 1", params)
			}
			id0, _ := cl.mustPrepare(t, "SELECT 1")
			le := func(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
			exec := func(parts ...[]byte) []byte {
				b := []byte{mysql.ComStmtExecute}
				for _, p := range parts {
					b = append(b, p...)
				}
				return b
			}
			cases := []struct {
				name string
				pkt  []byte
				code uint16 // 0: any error the backend gives
			}{
				{"unknown statement id", exec(le(0xdeadbeef), []byte{0}, le(1)), mysql.ERUnknownStmtHandler},
				{"unknown statement id, truncated", exec(le(0x7fff)), mysql.ERUnknownStmtHandler},
				{"no statement id", exec([]byte{1}), mysql.ERMalformedPacket},
				{"id only", exec(le(id)), mysql.ERMalformedPacket},
				{"no iteration count", exec(le(id0), []byte{0}, []byte{1, 0}), mysql.ERMalformedPacket},
				{"no null bitmap", exec(le(id), []byte{0}, le(1)), mysql.ERWrongArguments},
				{"types flag without types", exec(le(id), []byte{0}, le(1), []byte{0, 1}), mysql.ERWrongArguments},
				{"unbound types never sent", exec(le(id), []byte{0}, le(1), []byte{0, 0}), mysql.ERWrongArguments},
				{"types without values", exec(le(id), []byte{0}, le(1), []byte{0, 1, mysql.TypeLongLong, 0}), 0},
				{"value cut short", exec(le(id), []byte{0}, le(1), []byte{0, 1, mysql.TypeLongLong, 0, 7, 0, 0}), 0},
				{"string length beyond packet", exec(le(id), []byte{0}, le(1), []byte{0, 1, mysql.TypeVarString, 0, 0xfc, 0xff, 0xff, 'x'}), 0},
			}
			for _, c := range cases {
				cl.writePacket(0, c.pkt)
				if c.code == 0 {
					// Passed on: what to make of it is the server's business.
					res, err := cl.readResult()
					if err != nil {
						t.Fatalf("%s: connection failed: %v", c.name, err)
					}
					t.Logf("%s: error %v, %d rows", c.name, res.err, len(res.rows))
				} else if e := cl.expectErr(t); e.Code != c.code {
					t.Errorf("%s: got %v, want ERR %d", c.name, e, c.code)
				}
				cl.mustSelect1(t)
			}
			// The statement still works with a well-formed execute.
			cl.writePacket(0, exec(le(id), []byte{0}, le(1), []byte{0, 1, mysql.TypeLongLong, 0}, binary.LittleEndian.AppendUint64(nil, 41)))
			res, err := cl.readResult()
			if err != nil || res.err != nil || len(res.rows) != 1 {
				t.Fatalf("well-formed execute after the garbage: %+v, %v", res, err)
			}
			cl.close()
		})

		t.Run("InvalidUTF8Query", func(t *testing.T) {
			cl := mfDial(t, addr)
			cl.mustLogin(t)
			queries := []string{
				"\xff\xfe\xfd",
				"SELECT '\xc3\x28'",
				"SELECT 1 /* \xe2\x82 */",
				"SELECT '\x80abc' AS `\xff`",
				"\xc0\xafSELECT 1",
				"SELECT 0x41 -- \xf8\x88\x80\x80\x80",
				"SELECT \"\xed\xa0\x80\"",
				"SET @\xff = 1",
				"USE `\xfe\xff`",
				"SELECT '",
				"/*",
			}
			fixed := len(queries)
			for i := 0; i < 10; i++ {
				queries = append(queries, string(mfRandBytes(rng, 1+rng.Intn(80))))
			}
			for i, q := range queries {
				cl.writePacket(0, append([]byte{mysql.ComQuery}, q...))
				res, err := cl.readResult()
				if err != nil {
					t.Fatalf("query %q: connection failed: %v", q, err)
				}
				if res.err != nil && i < fixed {
					t.Logf("query %q: %v", q, res.err)
				}
				cl.mustSelect1(t)
			}
			cl.close()
		})
	})

	t.Run("HandshakeAborts", func(t *testing.T) {
		type plan struct {
			point  int
			cut    int
			linger bool
			junk   []byte
		}
		const points = 12
		plans := make([]plan, 200)
		for i := range plans {
			plans[i] = plan{point: rng.Intn(points), cut: rng.Intn(1 << 16), linger: rng.Intn(4) == 0, junk: mfRandBytes(rng, 1+rng.Intn(100))}
		}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		errs := make(chan error, len(plans))
		for i, pl := range plans {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if err := mfAbortHandshake(addr, pl.point, pl.cut, pl.linger, pl.junk); err != nil {
					errs <- fmt.Errorf("connection %d (point %d): %w", i, pl.point, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	// Every garbage connection is gone: the proxy holds only session A.
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := mfClientsConnected(t, p)
		if n == baseline {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%d client connections still open on the proxy, want %d (session A only)", n, baseline)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}

	stopLoop()
	if n := failures.Load(); n > 0 {
		t.Errorf("session A: %d of %d queries failed; first: %v", n, iterations.Load(), firstErr.Load())
	}
	if iterations.Load() < 10 {
		t.Errorf("session A ran only %d queries", iterations.Load())
	}
	t.Logf("session A ran %d queries meanwhile", iterations.Load())

	// The proxy still serves new sessions, with either kind of client.
	if got := queryString(t, openDB(t, proxyDSN(p, appUser, appPass, "", "")), "SELECT 1"); got != "1" {
		t.Fatalf("new session: SELECT 1 = %q", got)
	}
	cl := mfDial(t, addr)
	cl.mustLogin(t)
	cl.mustSelect1(t)
	cl.close()
}

// TestMalformedAnswersLikeServer sends the same bad input to MariaDB and to
// the proxy: bytes that are not MySQL (an HTTP request), handshake responses
// that are cut short, packets out of sequence before and after login. The
// proxy must answer with the server's error packet (code, SQLSTATE, message
// and sequence id) and close, as the server does: a client library shows
// the reason instead of "lost connection".
func TestMalformedAnswersLikeServer(t *testing.T) {
	srv := testenv.Shared(t)
	p := startProxy(t, proxyConfig(t, srv, ""))
	handshake := func(seq byte, payload []byte) func(*mfClient) {
		return func(cl *mfClient) {
			cl.mustGreeting(t)
			cl.writePacket(seq, payload)
		}
	}
	goodResponse := func(cl *mfClient) []byte {
		return cl.handshakeResponse(testenv.User, testenv.Password, auth.PluginNative)
	}
	cases := []struct {
		name string
		send func(*mfClient)
	}{
		{"HTTP request after the greeting", func(cl *mfClient) {
			cl.mustGreeting(t)
			cl.write([]byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"))
		}},
		{"HTTP request before the greeting is read", func(cl *mfClient) {
			cl.write([]byte("GET / HTTP/1.1\r\n\r\n"))
			cl.mustGreeting(t)
		}},
		{"empty handshake response", handshake(1, nil)},
		{"handshake response too short for its flags", handshake(1, []byte{0x05, 0xa2})},
		{"handshake response cut after its flags", handshake(1,
			append(binary.LittleEndian.AppendUint32(nil, mysql.ClientProtocol41|mysql.ClientSecureConnection), 0, 0, 0))},
		{"handshake response with sequence id 0", func(cl *mfClient) {
			cl.mustGreeting(t)
			cl.writePacket(0, goodResponse(cl))
		}},
		{"handshake response with sequence id 2", func(cl *mfClient) {
			cl.mustGreeting(t)
			cl.writePacket(2, goodResponse(cl))
		}},
		{"command with sequence id 5 after login", func(cl *mfClient) {
			cl.mustLogin(t)
			cl.writePacket(5, append([]byte{mysql.ComQuery}, "SELECT 1"...))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, wantSeq := mfAnswerThenClose(t, srv.Addr, c.send)
			got, gotSeq := mfAnswerThenClose(t, p.Addrs()[0], c.send)
			if want == nil {
				t.Fatalf("the server sent no error: the case tests nothing")
			}
			if got == nil || *got != *want || gotSeq != wantSeq {
				t.Errorf("proxy answered %v (sequence id %d), server %v (sequence id %d)", got, gotSeq, want, wantSeq)
			}
		})
	}
}

// mfEmptyCommand logs in to addr, sends an empty command packet and
// returns the answer (which must be an ERR) and its sequence id, checking
// that the connection stays usable.
func mfEmptyCommand(t *testing.T, addr string) ([]byte, byte) {
	t.Helper()
	cl := mfDial(t, addr)
	cl.mustLogin(t)
	cl.writePacket(0, nil)
	p, err := cl.c.ReadPacket()
	if err != nil {
		t.Fatalf("%s: empty command: %v", addr, err)
	}
	if !mysql.IsErr(p) {
		t.Fatalf("%s: empty command: got %x, want an ERR packet", addr, p)
	}
	answer, seq := append([]byte(nil), p...), cl.c.Seq()-1
	cl.mustSelect1(t)
	cl.close()
	return answer, seq
}

// mfAnswerThenClose connects to addr, runs send and returns the ERR packet
// the peer answers with (nil for none) and its sequence id, checking that
// the peer then closes the connection.
func mfAnswerThenClose(t *testing.T, addr string, send func(*mfClient)) (*mysql.SQLError, byte) {
	t.Helper()
	cl := mfDial(t, addr)
	send(cl)
	p, err := cl.c.ReadPacket()
	if err != nil {
		cl.expectClosedAfter(t, err)
		return nil, 0
	}
	if !mysql.IsErr(p) {
		t.Fatalf("%s: got %x, want an ERR packet", addr, p)
	}
	e, seq := mysql.ParseErr(p), cl.c.Seq()-1
	cl.expectClosed(t, false)
	return e, seq
}

// TestMalformedPreAuthHeaderMemory: a client that has not logged in sends
// four bytes announcing a 16 MB packet and then nothing. The proxy allocates
// the whole frame up front and, with no timeout during the handshake, keeps
// it for as long as the client stays connected.
func TestMalformedPreAuthHeaderMemory(t *testing.T) {
	p := startProxy(t, proxyConfig(t, testenv.Shared(t), ""))
	const conns = 32
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 0; i < conns; i++ {
		cl := mfDial(t, p.Addrs()[0])
		cl.mustGreeting(t)
		cl.write([]byte{0xff, 0xff, 0xff, 1})
	}
	time.Sleep(300 * time.Millisecond) // let the sessions read the headers
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 64<<20 {
		t.Fatalf("%d unauthenticated connections that sent 4 bytes each hold %d MiB of proxy heap", conns, grew>>20)
	}
}

// mfAbortHandshake connects and gives up at one of several points of the
// handshake. It reports an error only for a proxy that misbehaves (no
// greeting, a wrong answer, or a connection it does not close).
func mfAbortHandshake(addr string, point, cut int, linger bool, junk []byte) error {
	cl, err := mfDialE(addr)
	if err != nil {
		return err
	}
	defer cl.close()
	if linger {
		_ = cl.nc.SetLinger(0) // close with RST
	}
	if point == 0 {
		return nil
	}
	if err := cl.greeting(); err != nil {
		return err
	}
	resp := cl.handshakeResponse(testenv.User, testenv.Password, auth.PluginNative)
	framed := append([]byte{byte(len(resp)), byte(len(resp) >> 8), byte(len(resp) >> 16), 1}, resp...)
	switch point {
	case 1: // after the greeting
	case 2: // inside the response header
		cl.write(framed[:1+cut%3])
	case 3: // inside the response body
		cl.write(framed[:4+cut%len(resp)])
	case 4: // full response, gone before the answer
		cl.write(framed)
	case 5: // logged in, gone without COM_QUIT
		if err := cl.authenticate(); err != nil {
			return err
		}
	case 6: // unknown plugin: gone at the auth switch request
		cl.writePacket(1, cl.handshakeResponse(testenv.User, testenv.Password, "no_such_plugin"))
		p, err := cl.c.ReadPacket()
		if err != nil {
			return fmt.Errorf("auth switch request: %w", err)
		}
		if len(p) == 0 || p[0] != mysql.HeaderAuthSwitch {
			return fmt.Errorf("unknown plugin: got %x, want an auth switch request", p)
		}
	case 7: // auth switch answered with junk
		cl.writePacket(1, cl.handshakeResponse(testenv.User, testenv.Password, "no_such_plugin"))
		if _, err := cl.c.ReadPacket(); err != nil {
			return fmt.Errorf("auth switch request: %w", err)
		}
		cl.writePacket(3, junk)
		// caching_sha2_password may ask for full authentication first.
		if err := cl.expectClosedAnyE(); err != nil {
			return err
		}
	case 8: // wrong password
		cl.writePacket(1, cl.handshakeResponse(testenv.User, "wrong", auth.PluginNative))
		p, err := cl.c.ReadPacket()
		if err != nil {
			return fmt.Errorf("reply to a wrong password: %w", err)
		}
		if e := mysql.ParseErr(p); !mysql.IsErr(p) || e.Code != mysql.ERAccessDenied {
			return fmt.Errorf("wrong password: got %x, want ERR %d", p, mysql.ERAccessDenied)
		}
	case 9: // junk instead of the response, then half-close
		cl.write(junk)
		if err := cl.expectClosedE(true); err != nil {
			return err
		}
	case 10: // SSLRequest, then gone before the TLS handshake
		cl.writePacket(1, mysql.AppendSSLRequest(nil, mfCaps, 1<<24, mysql.CollationUTF8MB4GeneralCI))
	case 11: // SSLRequest, then junk for a TLS ClientHello
		cl.writePacket(1, mysql.AppendSSLRequest(nil, mfCaps, 1<<24, mysql.CollationUTF8MB4GeneralCI))
		cl.write(junk)
		if err := cl.expectClosedE(true); err != nil {
			return err
		}
	}
	// Write failures are not the proxy's fault: it may close first.
	return nil
}

// ---------------------------------------------------------------------------
// A minimal MySQL client over the protocol package, for sending garbage.

// mfCaps are the client's capabilities: classic EOF packets, no session
// tracking, mysql_native_password.
const mfCaps = mysql.ClientLongPassword | mysql.ClientLongFlag | mysql.ClientProtocol41 |
	mysql.ClientTransactions | mysql.ClientSecureConnection | mysql.ClientMultiResults |
	mysql.ClientPluginAuth | mysql.ClientPluginAuthLenencClientData

const mfTimeout = 10 * time.Second

type mfClient struct {
	nc  *net.TCPConn
	c   *mysql.Conn
	g   *mysql.Greeting
	err error // first write failure
}

func mfDialE(addr string) (*mfClient, error) {
	nc, err := net.DialTimeout("tcp", addr, mfTimeout)
	if err != nil {
		return nil, err
	}
	_ = nc.SetDeadline(time.Now().Add(mfTimeout))
	return &mfClient{nc: nc.(*net.TCPConn), c: mysql.NewConn(nc)}, nil
}

func mfDial(t testing.TB, addr string) *mfClient {
	t.Helper()
	cl, err := mfDialE(addr)
	if err != nil {
		t.Fatalf("dial proxy: %v", err)
	}
	t.Cleanup(cl.close)
	return cl
}

func (cl *mfClient) close() { _ = cl.nc.Close() }

func (cl *mfClient) greeting() error {
	p, err := cl.c.ReadPacket()
	if err != nil {
		return fmt.Errorf("read greeting: %w", err)
	}
	g, err := mysql.ParseGreeting(p)
	if err != nil {
		return fmt.Errorf("parse greeting: %w", err)
	}
	if len(g.AuthData) != auth.ScrambleLen {
		return fmt.Errorf("greeting scramble is %d bytes", len(g.AuthData))
	}
	cl.g = g
	return nil
}

func (cl *mfClient) mustGreeting(t testing.TB) {
	t.Helper()
	if err := cl.greeting(); err != nil {
		t.Fatal(err)
	}
}

func (cl *mfClient) handshakeResponse(user, password, plugin string) []byte {
	return mysql.AppendHandshakeResponse(nil, &mysql.HandshakeResponse{
		Capabilities: mfCaps, MaxPacket: 1 << 24, Charset: mysql.CollationUTF8MB4GeneralCI, User: user,
		AuthResponse: auth.NativeScramble([]byte(password), cl.g.AuthData), AuthPlugin: plugin,
	})
}

// login reads the greeting and authenticates as the proxy's test user with
// mysql_native_password.
func (cl *mfClient) login() error {
	if err := cl.greeting(); err != nil {
		return err
	}
	return cl.authenticate()
}

// authenticate answers a greeting already read.
func (cl *mfClient) authenticate() error {
	return cl.authenticateAs(testenv.User, testenv.Password)
}

// authenticateAs answers a greeting already read as user.
func (cl *mfClient) authenticateAs(user, password string) error {
	cl.writePacket(1, cl.handshakeResponse(user, password, auth.PluginNative))
	for {
		p, err := cl.c.ReadPacket()
		if err != nil {
			return fmt.Errorf("login: %w", err)
		}
		switch {
		case mysql.IsOK(p):
			return cl.err
		case mysql.IsErr(p):
			return fmt.Errorf("login: %w", mysql.ParseErr(p))
		case len(p) > 0 && p[0] == mysql.HeaderAuthSwitch:
			plugin, data, err := mysql.ParseAuthSwitch(p)
			if err != nil || plugin != auth.PluginNative {
				return fmt.Errorf("login: unexpected auth switch to %q: %v", plugin, err)
			}
			cl.writePacket(cl.c.Seq(), auth.NativeScramble([]byte(password), data))
		default:
			return fmt.Errorf("login: unexpected packet %x", p)
		}
	}
}

func (cl *mfClient) mustLogin(t testing.TB) {
	t.Helper()
	if err := cl.login(); err != nil {
		t.Fatal(err)
	}
}

// write sends raw bytes.
func (cl *mfClient) write(b []byte) {
	if _, err := cl.nc.Write(b); err != nil && cl.err == nil {
		cl.err = err
	}
}

// writePacket sends payload as one packet with sequence id seq.
func (cl *mfClient) writePacket(seq byte, payload []byte) {
	cl.c.SetSeq(seq)
	err := cl.c.WritePacket(payload)
	if err == nil {
		err = cl.c.Flush()
	}
	if err != nil && cl.err == nil {
		cl.err = err
	}
}

type mfResult struct {
	err      *mysql.SQLError
	ok       bool
	defs     [][]byte   // the column definition packets
	rows     [][]string // text rows (binary rows as one raw string), NULL as ""
	nulls    [][]bool   // which of a text row's values are NULL
	firstSeq byte
}

// readResult reads the response to COM_QUERY or COM_STMT_EXECUTE (one result;
// the client does not enable multi-statements).
func (cl *mfClient) readResult() (mfResult, error) {
	var res mfResult
	p, err := cl.c.ReadPacket()
	if err != nil {
		return res, err
	}
	res.firstSeq = cl.c.Seq() - 1
	switch {
	case mysql.IsErr(p):
		res.err = mysql.ParseErr(p)
		return res, nil
	case mysql.IsOK(p):
		res.ok = true
		return res, nil
	}
	cols, _, _, ok := mysql.ReadLenEncInt(p)
	if !ok || cols == 0 || cols > 4096 {
		return res, fmt.Errorf("bad column count packet %x", p)
	}
	for i := uint64(0); i < cols; i++ {
		p, err := cl.c.ReadPacket()
		if err != nil {
			return res, fmt.Errorf("column %d: %w", i, err)
		}
		res.defs = append(res.defs, bytes.Clone(p))
	}
	if p, err = cl.c.ReadPacket(); err != nil || !mysql.IsEOF(p) {
		return res, fmt.Errorf("EOF after columns: %x, %v", p, err)
	}
	for {
		p, err := cl.c.ReadPacket()
		if err != nil {
			return res, fmt.Errorf("row: %w", err)
		}
		switch {
		case mysql.IsErr(p):
			res.err = mysql.ParseErr(p)
			return res, nil
		case mysql.IsEOF(p) && len(p) < 9:
			return res, nil
		case p[0] == mysql.HeaderOK: // binary row
			res.rows = append(res.rows, []string{string(p)})
		default:
			r := mysql.NewReader(p)
			var row []string
			var nulls []bool
			for i := uint64(0); i < cols; i++ {
				rest := r.Rest()
				nulls = append(nulls, len(rest) > 0 && rest[0] == 0xfb)
				row = append(row, string(r.LenEncString()))
			}
			if !r.OK() {
				return res, fmt.Errorf("bad text row %x", p)
			}
			res.rows = append(res.rows, row)
			res.nulls = append(res.nulls, nulls)
		}
	}
}

func (cl *mfClient) mustSelect1(t testing.TB) {
	t.Helper()
	cl.writePacket(0, append([]byte{mysql.ComQuery}, "SELECT 1"...))
	res, err := cl.readResult()
	if err != nil {
		t.Fatalf("SELECT 1: %v", err)
	}
	if res.err != nil || len(res.rows) != 1 || len(res.rows[0]) != 1 || res.rows[0][0] != "1" {
		t.Fatalf("SELECT 1: got %+v", res)
	}
}

// mustPrepare prepares sql and returns its id and parameter count.
func (cl *mfClient) mustPrepare(t testing.TB, sql string) (id uint32, params int) {
	t.Helper()
	cl.writePacket(0, append([]byte{mysql.ComStmtPrepare}, sql...))
	p, err := cl.c.ReadPacket()
	if err != nil {
		t.Fatalf("prepare %q: %v", sql, err)
	}
	if mysql.IsErr(p) || len(p) < 12 || p[0] != mysql.HeaderOK {
		t.Fatalf("prepare %q: got %x", sql, p)
	}
	id = binary.LittleEndian.Uint32(p[1:])
	cols := int(binary.LittleEndian.Uint16(p[5:]))
	params = int(binary.LittleEndian.Uint16(p[7:]))
	for _, n := range []int{params, cols} {
		if n == 0 {
			continue
		}
		for i := 0; i <= n; i++ { // definitions, then EOF
			if _, err := cl.c.ReadPacket(); err != nil {
				t.Fatalf("prepare %q: definitions: %v", sql, err)
			}
		}
	}
	return id, params
}

// expectErr reads one packet that must be an ERR.
func (cl *mfClient) expectErr(t testing.TB) *mysql.SQLError {
	t.Helper()
	p, err := cl.c.ReadPacket()
	if err != nil {
		t.Fatalf("want an ERR packet, got %v", err)
	}
	if !mysql.IsErr(p) {
		t.Fatalf("want an ERR packet, got %x", p)
	}
	return mysql.ParseErr(p)
}

// expectClosed checks the proxy closes the connection: after at most ERR
// packets, reads end with EOF or a reset, not a timeout. halfClose first
// shuts down the client's sending side, so a proxy waiting for more of a
// packet sees the end of the stream.
func (cl *mfClient) expectClosed(t testing.TB, halfClose bool) {
	t.Helper()
	if err := cl.expectClosedE(halfClose); err != nil {
		t.Fatal(err)
	}
}

func (cl *mfClient) expectClosedE(halfClose bool) error {
	if halfClose {
		_ = cl.nc.CloseWrite()
	}
	for {
		p, err := cl.c.ReadPacket()
		if err != nil {
			return mfClosedErr(err)
		}
		if !mysql.IsErr(p) {
			return fmt.Errorf("closing connection: got %x, want only ERR before the close", p)
		}
	}
}

// expectClosedAnyE half-closes and checks the proxy then closes too,
// whatever it sends before.
func (cl *mfClient) expectClosedAnyE() error {
	_ = cl.nc.CloseWrite()
	for {
		if _, err := cl.c.ReadPacket(); err != nil {
			return mfClosedErr(err)
		}
	}
}

func (cl *mfClient) expectClosedAfter(t testing.TB, err error) {
	t.Helper()
	if err := mfClosedErr(err); err != nil {
		t.Fatal(err)
	}
}

// mfClosedErr accepts the errors of a connection the peer closed.
func mfClosedErr(err error) error {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), isConnReset(err):
		return nil
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("the proxy did not close the connection within %v", mfTimeout)
	}
	return fmt.Errorf("connection ended with %v", err)
}

func isConnReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe"))
}

func mfRandBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	rng.Read(b)
	return b
}

// mfClientsConnected reads the proxy's open client connections gauge.
func mfClientsConnected(t testing.TB, p *proxy.Proxy) int {
	t.Helper()
	resp, err := http.Get("http://" + p.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "shardgate_client_connections "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metrics: %q: %v", sc.Text(), err)
			}
			return int(f)
		}
	}
	t.Fatal("metrics: no shardgate_client_connections")
	return 0
}
