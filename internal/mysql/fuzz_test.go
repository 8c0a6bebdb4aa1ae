package mysql

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Fuzz targets for everything the proxy decodes from a peer, and round-trip
// tests of packet framing across the 16 MB frame boundary.
//
// Run one target for a while with, e.g.:
//
//	go test ./internal/mysql/ -run='^$' -fuzz='^FuzzRelay$' -fuzztime=20s
//
// A plain `go test` runs only the seeds below and testdata/fuzz.

// ---------------------------------------------------------------------------
// An in-memory net.Conn: reads come from a byte slice, writes go to a buffer.

type memConn struct {
	r io.Reader
	w io.Writer
	// chunk, when > 0, caps the bytes returned per Read, to exercise short
	// reads; eofWithData returns io.EOF together with the last bytes, as the
	// io.Reader contract allows.
	chunk       int
	eofWithData bool
}

func (c *memConn) Read(p []byte) (int, error) {
	if c.chunk > 0 && len(p) > c.chunk {
		p = p[:c.chunk]
	}
	n, err := c.r.Read(p)
	if err == nil && c.eofWithData {
		if br, ok := c.r.(*bytes.Reader); ok && br.Len() == 0 {
			err = io.EOF
		}
	}
	return n, err
}

func (c *memConn) Write(p []byte) (int, error) {
	if c.w == nil {
		return len(p), nil
	}
	return c.w.Write(p)
}

func (c *memConn) Close() error                       { return nil }
func (c *memConn) LocalAddr() net.Addr                { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3306} }
func (c *memConn) RemoteAddr() net.Addr               { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000} }
func (c *memConn) SetDeadline(t time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(t time.Time) error { return nil }

// ---------------------------------------------------------------------------
// Seed material: real packets as servers and clients send them.

// frame returns one physical packet: header plus payload.
func frame(seq byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

// stream frames payloads with consecutive sequence ids from seq.
func stream(seq byte, payloads ...[]byte) []byte {
	var b []byte
	for _, p := range payloads {
		b = append(b, frame(seq, p)...)
		seq++
	}
	return b
}

func seedSalt() []byte { return []byte("abcdefgh12345678ijkl") }

// seedGreetings are handshake v10 packets: MariaDB 10.11 and MySQL 8 style,
// a short pre-4.1 one and a greeting-time ERR.
func seedGreetings() [][]byte {
	maria := AppendGreeting(nil, &Greeting{
		ServerVersion: "5.5.5-10.11.6-MariaDB", ConnectionID: 42, AuthData: seedSalt(),
		Capabilities: 0xf7fe&^ClientMySQL | ClientProtocol41 | ClientSecureConnection | ClientPluginAuth |
			ClientConnectAttrs | ClientPluginAuthLenencClientData | ClientSessionTrack | ClientDeprecateEOF |
			ClientMultiStatements | ClientMultiResults | ClientPSMultiResults,
		Charset: CollationUTF8MB4GeneralCI, Status: StatusAutocommit, AuthPlugin: "mysql_native_password",
	})
	mysql8 := AppendGreeting(nil, &Greeting{
		ServerVersion: "8.0.36", ConnectionID: 7, AuthData: []byte("\x01\x02\x03\x04\x05\x06\x07\x08\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c"),
		Capabilities: 0xdfffffff, Charset: 255, Status: StatusAutocommit, AuthPlugin: "caching_sha2_password",
	})
	// Pre-4.1 servers may stop after the lower capability flags.
	short := []byte{10}
	short = append(short, "4.0.27\x00"...)
	short = AppendUint32(short, 3)
	short = append(short, "abcdefgh\x00"...)
	short = AppendUint16(short, 0x202c)
	tooMany := AppendErr(nil, NewError(ERConCount, StateConnRejected, "Too many connections"))
	// An old-style ERR without SQLSTATE, as a server sends before it knows
	// the client speaks 4.1.
	hostBlocked := append([]byte{0xff, 0x69, 0x04}, "Host '10.0.0.1' is blocked"...)
	return [][]byte{maria, mysql8, short, tooMany, hostBlocked}
}

// connAttrs encodes a connection attributes block's contents.
func connAttrs(kv ...string) []byte {
	var b []byte
	for _, s := range kv {
		b = AppendLenEncStr(b, s)
	}
	return b
}

// seedHandshakeResponses are HandshakeResponse41 packets as real clients
// send them.
func seedHandshakeResponses() [][]byte {
	goDriver := AppendHandshakeResponse(nil, &HandshakeResponse{
		Capabilities: ClientProtocol41 | ClientSecureConnection | ClientLongPassword | ClientTransactions |
			ClientLocalFiles | ClientPluginAuth | ClientMultiResults | ClientConnectAttrs |
			ClientPluginAuthLenencClientData | ClientConnectWithDB | ClientFoundRows | ClientLongFlag,
		MaxPacket: 0, Charset: CollationUTF8MB4GeneralCI, User: "app",
		AuthResponse: bytes.Repeat([]byte{0x5a}, 32), Database: "basic", AuthPlugin: "caching_sha2_password",
		Attrs: connAttrs("_client_name", "Go-MySQL-Driver", "_os", "linux", "_platform", "amd64",
			"_pid", "12345", "_server_host", "127.0.0.1"),
	})
	libmysql := AppendHandshakeResponse(nil, &HandshakeResponse{
		Capabilities: 0x01bfa68d | ClientProtocol41, MaxPacket: 1 << 24, Charset: 255, User: "root",
		AuthResponse: bytes.Repeat([]byte{0xa5}, 20), AuthPlugin: "mysql_native_password",
		Attrs: connAttrs("_client_name", "libmysql", "_client_version", "8.0.36", "program_name", "mysql"),
	})
	// Secure connection without lenenc auth data, without attributes.
	oldish := AppendHandshakeResponse(nil, &HandshakeResponse{
		Capabilities: ClientProtocol41 | ClientSecureConnection | ClientPluginAuth, MaxPacket: 1 << 24,
		Charset: 33, User: "u", AuthResponse: nil, AuthPlugin: "mysql_native_password",
	})
	// Pre-secure-connection: NUL-terminated auth response.
	legacy := AppendUint32(nil, ClientProtocol41|ClientLongPassword)
	legacy = AppendUint32(legacy, 1<<24)
	legacy = append(legacy, 8)
	legacy = append(legacy, make([]byte, 23)...)
	legacy = append(legacy, "olduser\x00scrambled\x00"...)
	ssl := AppendSSLRequest(nil, ClientProtocol41|ClientSecureConnection, 1<<24, 45)
	return [][]byte{goDriver, libmysql, oldish, legacy, ssl}
}

// sessionStateBlock is a session-state-change block as MySQL/MariaDB send.
func sessionStateBlock() []byte {
	var b []byte
	entry := func(typ byte, data []byte) {
		b = append(b, typ)
		b = AppendLenEncString(b, data)
	}
	entry(TrackSystemVariables, connAttrs("autocommit", "OFF"))
	entry(TrackSystemVariables, connAttrs("character_set_client", "latin1"))
	entry(TrackSchema, connAttrs("test"))
	entry(TrackStateChange, connAttrs("1"))
	entry(TrackTransactionState, connAttrs("T_______"))
	entry(TrackGTIDs, append([]byte{0}, connAttrs("0-1-42")...))
	return b
}

// seedOKs are OK packets with and without session-state data. The second
// result of each pair says whether it was made for CLIENT_SESSION_TRACK.
func seedOKs() (oks [][]byte, tracked []bool) {
	add := func(p []byte, t bool) { oks, tracked = append(oks, p), append(tracked, t) }
	add([]byte{0, 0, 0, 2, 0, 0, 0}, false)
	add(AppendOK(nil, HeaderOK, &OKPacket{AffectedRows: 3, LastInsertID: 70000, Status: StatusAutocommit, Warnings: 1,
		Info: []byte("Rows matched: 3  Changed: 3  Warnings: 1")}, 0), false)
	add(AppendOK(nil, HeaderOK, &OKPacket{AffectedRows: 1 << 40, LastInsertID: 1<<24 + 1, Status: StatusInTrans}, ClientSessionTrack), true)
	add(AppendOK(nil, HeaderOK, &OKPacket{Status: StatusAutocommit | StatusSessionStateChange,
		SessionState: sessionStateBlock()}, ClientSessionTrack), true)
	add(AppendOK(nil, HeaderOK, &OKPacket{Status: StatusSessionStateChange, Info: []byte("info"),
		SessionState: []byte{TrackSchema, 5, 4, 't', 'e', 's', 't'}}, ClientSessionTrack), true)
	// DEPRECATE_EOF result-set terminator.
	add(AppendOK(nil, HeaderEOF, &OKPacket{Status: StatusAutocommit | StatusMoreResultsExists}, ClientSessionTrack), true)
	return oks, tracked
}

func seedErrs() [][]byte {
	return [][]byte{
		AppendErr(nil, NewError(ERAccessDenied, StateAccessDenied, "Access denied for user 'app'@'localhost' (using password: YES)")),
		AppendErr(nil, NewError(ERParse, StateSyntax, "You have an error in your SQL syntax")),
		append([]byte{0xff, 0x15, 0x04}, "no sqlstate"...),
		{0xff, 0x15},
	}
}

func seedEOF() []byte { return AppendEOF(nil, 0, StatusAutocommit) }

// columnDef is a ColumnDefinition41 packet.
func columnDef(name string, typ byte) []byte {
	var b []byte
	for _, s := range []string{"def", "test", "t", "t", name, name} {
		b = AppendLenEncStr(b, s)
	}
	b = append(b, 0x0c)
	b = AppendUint16(b, uint16(CollationBinary))
	b = AppendUint32(b, 20)
	b = append(b, typ)
	b = AppendUint16(b, 0x81) // NOT_NULL | BINARY
	b = append(b, 0, 0, 0)
	return b
}

// resultSetStream is the backend response to SELECT 1, 'x' with classic EOFs
// or with DEPRECATE_EOF, starting at sequence id 1.
func resultSetStream(deprecateEOF bool, more bool) []byte {
	status := StatusAutocommit
	if more {
		status |= StatusMoreResultsExists
	}
	ps := [][]byte{{2}, columnDef("1", TypeLongLong), columnDef("x", TypeVarString)}
	if !deprecateEOF {
		ps = append(ps, seedEOF())
	}
	ps = append(ps, connAttrs("1", "x"), append([]byte{0xfb}, connAttrs("y")...))
	if deprecateEOF {
		ps = append(ps, AppendOK(nil, HeaderEOF, &OKPacket{Status: status}, ClientSessionTrack))
	} else {
		ps = append(ps, AppendEOF(nil, 0, status))
	}
	return stream(1, ps...)
}

// ---------------------------------------------------------------------------
// Framing

// refPacket is a logical packet as a reference parser of the input sees it.
type refPacket struct {
	payload []byte
	frames  int
	lastSeq byte
}

// refPackets splits data into complete logical packets; a trailing partial
// one is dropped.
func refPackets(data []byte) []refPacket {
	var out []refPacket
	pos := 0
	for {
		var pk refPacket
		pk.payload = []byte{}
		for {
			if len(data)-pos < 4 {
				return out
			}
			n := int(data[pos]) | int(data[pos+1])<<8 | int(data[pos+2])<<16
			seq := data[pos+3]
			if len(data)-pos-4 < n {
				return out
			}
			pk.payload = append(pk.payload, data[pos+4:pos+4+n]...)
			pk.frames++
			pk.lastSeq = seq
			pos += 4 + n
			if n < MaxPayload {
				break
			}
		}
		out = append(out, pk)
	}
}

func FuzzReadPacket(f *testing.F) {
	for _, g := range seedGreetings() {
		f.Add(frame(0, g), uint8(0))
	}
	for _, h := range seedHandshakeResponses() {
		f.Add(frame(1, h), uint8(3))
	}
	oks, _ := seedOKs()
	f.Add(stream(1, oks...), uint8(0x80|5))
	f.Add(stream(1, seedErrs()...), uint8(1))
	f.Add(resultSetStream(false, false), uint8(0))
	f.Add(resultSetStream(true, true), uint8(0x80))
	f.Add([]byte{}, uint8(0))
	f.Add([]byte{0, 0, 0, 0}, uint8(0))             // empty packet
	f.Add([]byte{1, 0, 0}, uint8(0))                // partial header
	f.Add([]byte{5, 0, 0, 0, 3, 'S'}, uint8(0))     // truncated body
	f.Add([]byte{0xff, 0xff, 0xff, 0}, uint8(0))    // announces a 16 MB frame, then EOF
	f.Add([]byte{0xff, 0xff, 0xff, 0, 1}, uint8(0)) // ... with one byte of it
	// A frame larger than the read buffer (takes the direct-read path).
	big := bytes.Repeat([]byte("0123456789abcdef"), readBufferSize/16+100)
	f.Add(append(frame(0, big), frame(1, []byte{ComPing})...), uint8(0x80|200))

	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		chunk := int(mode & 0x7f)
		eofWithData := mode&0x80 != 0
		want := refPackets(data)

		// Logical packets.
		c := NewConn(&memConn{r: bytes.NewReader(data), chunk: chunk, eofWithData: eofWithData})
		c.MaxPacket = 1 << 20
		c.ReadTimeout = time.Minute // exercises the deadline path (a no-op here)
		var got int
		for {
			p, err := c.ReadPacket()
			if err != nil {
				if got != len(want) {
					t.Fatalf("ReadPacket failed after %d packets, want %d: %v", got, len(want), err)
				}
				checkReadErr(t, err)
				break
			}
			if got >= len(want) {
				t.Fatalf("ReadPacket returned packet %d (%d bytes), input holds only %d complete packets", got, len(p), len(want))
			}
			if !bytes.Equal(p, want[got].payload) {
				t.Fatalf("packet %d: got %d bytes %q, want %d bytes %q", got, len(p), trunc(p), len(want[got].payload), trunc(want[got].payload))
			}
			if c.Seq() != want[got].lastSeq+1 {
				t.Fatalf("packet %d: next seq %d, want %d", got, c.Seq(), want[got].lastSeq+1)
			}
			got++
		}

		// Physical frames.
		c = NewConn(&memConn{r: bytes.NewReader(data), chunk: chunk, eofWithData: eofWithData})
		c.MaxPacket = 1 << 20
		pos := 0
		for {
			p, more, err := c.ReadFrame()
			if err != nil {
				if len(data)-pos >= 4 {
					n := int(data[pos]) | int(data[pos+1])<<8 | int(data[pos+2])<<16
					if len(data)-pos-4 >= n {
						t.Fatalf("ReadFrame failed at offset %d with a complete %d-byte frame there: %v", pos, n, err)
					}
				}
				checkReadErr(t, err)
				break
			}
			n := int(data[pos]) | int(data[pos+1])<<8 | int(data[pos+2])<<16
			if len(p) != n {
				t.Fatalf("frame at %d announces %d bytes, ReadFrame returned %d", pos, n, len(p))
			}
			if !bytes.Equal(p, data[pos+4:pos+4+n]) {
				t.Fatalf("frame at %d: payload differs", pos)
			}
			if more != (n == MaxPayload) {
				t.Fatalf("frame at %d (%d bytes): more = %v", pos, n, more)
			}
			if c.Seq() != data[pos+3]+1 {
				t.Fatalf("frame at %d: next seq %d, want %d", pos, c.Seq(), data[pos+3]+1)
			}
			pos += 4 + n
		}
	})
}

// readEnd is how a reference read of a stream with CheckSeq ends.
type readEnd uint8

const (
	endEOF        readEnd = 1 << iota // the input ran out (possibly mid-frame)
	endOutOfOrder                     // a frame's sequence id is not the expected one
	endTooLarge                       // a frame takes the packet beyond MaxPacket
)

// refCheckedPackets splits data as a server reads its client's packets:
// sequence ids must follow on from seq across frames and packets, and a
// packet may not grow beyond maxPacket. The checks come at each frame
// header, before its body is read; when both fail either error will do.
func refCheckedPackets(data []byte, seq byte, maxPacket int) ([]refPacket, readEnd) {
	var out []refPacket
	pos := 0
	for {
		pk := refPacket{payload: []byte{}}
		for {
			if len(data)-pos < 4 {
				return out, endEOF
			}
			n := int(data[pos]) | int(data[pos+1])<<8 | int(data[pos+2])<<16
			var end readEnd
			if data[pos+3] != seq {
				end |= endOutOfOrder
			}
			if len(pk.payload)+n > maxPacket {
				end |= endTooLarge
			}
			if end != 0 {
				return out, end
			}
			if len(data)-pos-4 < n {
				return out, endEOF
			}
			pk.payload = append(pk.payload, data[pos+4:pos+4+n]...)
			pk.frames++
			pk.lastSeq = seq
			seq++
			pos += 4 + n
			if n < MaxPayload {
				break
			}
		}
		out = append(out, pk)
	}
}

// refCheckedFrames is refCheckedPackets for ReadFrame, which bounds each
// frame by maxPacket.
func refCheckedFrames(data []byte, seq byte, maxPacket int) (frames [][]byte, end readEnd) {
	for pos := 0; ; {
		if len(data)-pos < 4 {
			return frames, endEOF
		}
		n := int(data[pos]) | int(data[pos+1])<<8 | int(data[pos+2])<<16
		if data[pos+3] != seq {
			end |= endOutOfOrder
		}
		if n > maxPacket {
			end |= endTooLarge
		}
		if end != 0 {
			return frames, end
		}
		if len(data)-pos-4 < n {
			return frames, endEOF
		}
		frames = append(frames, data[pos+4:pos+4+n])
		seq++
		pos += 4 + n
	}
}

// checkEnd checks that a read ended with an error its reference allows.
func checkEnd(t *testing.T, err error, end readEnd) {
	t.Helper()
	switch {
	case end&endEOF != 0 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)),
		end&endOutOfOrder != 0 && errors.Is(err, ErrPacketsOutOfOrder),
		end&endTooLarge != 0 && errors.Is(err, ErrPacketTooLarge):
		return
	}
	t.Fatalf("read ended with %v; want %s", err, end)
}

func (e readEnd) String() string {
	var s []string
	for _, k := range []struct {
		bit  readEnd
		name string
	}{{endEOF, "the end of the input"}, {endOutOfOrder, "ErrPacketsOutOfOrder"}, {endTooLarge, "ErrPacketTooLarge"}} {
		if e&k.bit != 0 {
			s = append(s, k.name)
		}
	}
	return strings.Join(s, " or ")
}

// maxFrameBody is a full-size frame's body, made once: frames around
// 0xffffff are generated from it (growFrames).
var maxFrameBody = patterned(MaxPayload)

// growFrames expands a compact description of a stream: a frame header
// announcing MaxPayload-2 bytes or more is followed by a generated body of
// that length, and the input after the header is the next frame. Only the
// first two such headers grow, so one input stays within a few tens of MB;
// the other frames are taken as they are, possibly cut short.
func growFrames(data []byte) []byte {
	var out []byte
	grown := 0
	for len(data) >= 4 {
		n := int(data[0]) | int(data[1])<<8 | int(data[2])<<16
		if n >= MaxPayload-2 && grown < 2 {
			grown++
			out = append(append(out, data[:4]...), maxFrameBody[:n]...)
			data = data[4:]
			continue
		}
		m := min(4+n, len(data))
		out = append(out, data[:m]...)
		data = data[m:]
	}
	return append(out, data...)
}

// hdr is a frame header announcing n bytes with sequence id seq.
func hdr(n int, seq byte) []byte { return []byte{byte(n), byte(n >> 8), byte(n >> 16), seq} }

// FuzzReadPacketChecked reads as the proxy reads its clients: with CheckSeq,
// from a given sequence id, under a given MaxPacket. Frames out of sequence,
// empty frames, frames of 0xffffff bytes and around it (their continuation
// included), and lengths beyond MaxPacket must give exactly the packets a
// reference reader finds, then the error it expects.
//
// mode: bit 7 grows frames announcing MaxPayload-2 bytes or more
// (growFrames); bit 6 returns io.EOF with the last bytes; the low 6 bits cap
// the bytes per Read (scaled by 64 KB for grown input).
func FuzzReadPacketChecked(f *testing.F) {
	const grow, eofWithData = 0x80, 0x40
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	ping := []byte{ComPing}
	// Sequence ids.
	f.Add(frame(0, ping), uint8(0), uint32(1<<20), uint8(0))
	f.Add(frame(1, ping), uint8(0), uint32(1<<20), uint8(0))                             // one ahead
	f.Add(frame(255, ping), uint8(0), uint32(1<<20), uint8(0))                           // one behind
	f.Add(stream(255, ping, ping, ping), uint8(255), uint32(1<<20), uint8(0))            // wraps around
	f.Add(cat(frame(0, ping), frame(0, ping)), uint8(0), uint32(1<<20), uint8(3))        // second packet repeats the id
	f.Add(cat(stream(1, ping, ping), frame(7, ping)), uint8(1), uint32(1<<20), uint8(1)) // third jumps
	f.Add(frame(2, seedHandshakeResponses()[0]), uint8(1), uint32(64<<10), uint8(0))     // handshake response out of order
	// Empty frames.
	f.Add(hdr(0, 0), uint8(0), uint32(1<<20), uint8(0))
	f.Add(stream(0, nil, nil, ping, nil), uint8(0), uint32(0), uint8(0))
	f.Add(hdr(0, 3), uint8(0), uint32(1<<20), uint8(0)) // empty and out of order
	// Announced lengths beyond MaxPacket, with and without the body.
	f.Add(frame(0, []byte("12345")), uint8(0), uint32(4), uint8(0))
	f.Add(frame(0, []byte("12345")), uint8(0), uint32(5), uint8(0))
	f.Add(hdr(MaxPayload, 0), uint8(0), uint32(64<<10), uint8(0))
	f.Add(cat(hdr(MaxPayload, 0), []byte{1}), uint8(0), uint32(1<<30), uint8(eofWithData))
	f.Add(hdr(MaxPayload-1, 5), uint8(0), uint32(64<<10), uint8(0)) // too large and out of order
	// Frames of 0xffffff bytes and around it (grown).
	f.Add(cat(hdr(MaxPayload-1, 0), frame(1, ping)), uint8(0), uint32(1<<30), uint8(grow))
	f.Add(cat(hdr(MaxPayload, 0), hdr(0, 1), frame(2, ping)), uint8(0), uint32(MaxPayload), uint8(grow))            // exactly MaxPacket, empty continuation
	f.Add(cat(hdr(MaxPayload, 0), hdr(0, 1)), uint8(0), uint32(MaxPayload-1), uint8(grow))                          // one byte over
	f.Add(cat(hdr(MaxPayload, 0), frame(1, ping)), uint8(0), uint32(MaxPayload), uint8(grow))                       // continuation over MaxPacket
	f.Add(cat(hdr(MaxPayload, 0), frame(0, ping)), uint8(0), uint32(1<<30), uint8(grow))                            // continuation out of order
	f.Add(cat(hdr(MaxPayload, 0), hdr(MaxPayload, 1), hdr(0, 2)), uint8(0), uint32(1<<30), uint8(grow|eofWithData)) // two full frames
	f.Add(cat(hdr(MaxPayload, 9), hdr(MaxPayload-2, 10)), uint8(9), uint32(1<<30), uint8(grow|1))                   // continuation cut short

	f.Fuzz(func(t *testing.T, data []byte, seq uint8, limit uint32, mode uint8) {
		chunk := int(mode & 0x3f)
		if mode&grow != 0 {
			data = growFrames(data)
			chunk <<= 16
		}
		maxPacket := int(min(limit, 1<<30))
		conn := func() *Conn {
			c := NewConn(&memConn{r: bytes.NewReader(data), chunk: chunk, eofWithData: mode&eofWithData != 0})
			c.MaxPacket, c.CheckSeq = maxPacket, true
			c.SetSeq(seq)
			return c
		}

		want, end := refCheckedPackets(data, seq, maxPacket)
		c := conn()
		for i := 0; ; i++ {
			p, err := c.ReadPacket()
			if err != nil {
				if i != len(want) {
					t.Fatalf("ReadPacket failed after %d packets, want %d: %v", i, len(want), err)
				}
				checkEnd(t, err, end)
				break
			}
			if i >= len(want) {
				t.Fatalf("ReadPacket returned packet %d (%d bytes); the reference ends after %d with %s", i, len(p), len(want), end)
			}
			if !bytes.Equal(p, want[i].payload) {
				t.Fatalf("packet %d: got %d bytes (first difference at %d), want %d", i, len(p), firstDiff(p, want[i].payload), len(want[i].payload))
			}
			if c.Seq() != want[i].lastSeq+1 {
				t.Fatalf("packet %d: next seq %d, want %d", i, c.Seq(), want[i].lastSeq+1)
			}
		}

		frames, end := refCheckedFrames(data, seq, maxPacket)
		c = conn()
		for i := 0; ; i++ {
			p, more, err := c.ReadFrame()
			if err != nil {
				if i != len(frames) {
					t.Fatalf("ReadFrame failed after %d frames, want %d: %v", i, len(frames), err)
				}
				checkEnd(t, err, end)
				break
			}
			if i >= len(frames) {
				t.Fatalf("ReadFrame returned frame %d (%d bytes); the reference ends after %d with %s", i, len(p), len(frames), end)
			}
			if !bytes.Equal(p, frames[i]) || more != (len(p) == MaxPayload) {
				t.Fatalf("frame %d: got %d bytes (more %v), want %d", i, len(p), more, len(frames[i]))
			}
		}
	})
}

// checkReadErr accepts the errors a read of a finite, possibly truncated,
// stream may end with.
func checkReadErr(t *testing.T, err error) {
	t.Helper()
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, ErrPacketTooLarge):
	default:
		t.Fatalf("unexpected read error %T: %v", err, err)
	}
}

func trunc(p []byte) []byte {
	if len(p) > 64 {
		return p[:64]
	}
	return p
}

// ---------------------------------------------------------------------------
// Handshake

func FuzzParseGreeting(f *testing.F) {
	for _, g := range seedGreetings() {
		f.Add(g)
	}
	f.Add([]byte{})
	f.Add([]byte{10})
	f.Add([]byte{9, 'x', 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		in := append([]byte(nil), p...)
		g, err := ParseGreeting(in)
		if err != nil {
			if g != nil {
				t.Fatalf("ParseGreeting returned both %+v and %v", g, err)
			}
			return
		}
		if len(g.AuthData) < 8 {
			t.Fatalf("parsed greeting has %d bytes of auth data; AppendGreeting needs 8", len(g.AuthData))
		}
		// The result must not alias the packet buffer, which is reused.
		snapshot := *g
		snapshot.AuthData = append([]byte(nil), g.AuthData...)
		for i := range in {
			in[i] ^= 0xff
		}
		if !reflect.DeepEqual(&snapshot, g) {
			t.Fatalf("greeting aliases its input: %+v", g)
		}
		enc := AppendGreeting(nil, g) // must not panic
		// AppendGreeting writes the 4.1 form with a NUL-terminated part 2 of
		// the scramble: it reproduces greetings with secure connection and a
		// scramble of 20 or more bytes (the only kind servers send); for
		// those, decoding the encoding must give the same greeting.
		if g.Capabilities&ClientSecureConnection == 0 || len(g.AuthData) < 20 || len(g.AuthData) > 254 {
			return
		}
		g2, err := ParseGreeting(enc)
		if err != nil {
			t.Fatalf("re-encoded greeting does not parse: %v\n%+v\n%x", err, g, enc)
		}
		if !reflect.DeepEqual(g, g2) {
			t.Fatalf("greeting round trip:\n got %+v\nwant %+v", g2, g)
		}
	})
}

func FuzzParseHandshakeResponse(f *testing.F) {
	for _, h := range seedHandshakeResponses() {
		f.Add(h)
	}
	f.Add([]byte{})
	f.Add(AppendUint32(nil, ClientProtocol41|ClientPluginAuthLenencClientData))
	f.Fuzz(func(t *testing.T, p []byte) {
		_ = IsSSLRequest(p)
		in := append([]byte(nil), p...)
		h, err := ParseHandshakeResponse(in)
		if err != nil {
			if h != nil {
				t.Fatalf("ParseHandshakeResponse returned both %+v and %v", h, err)
			}
			return
		}
		snapshot := *h
		snapshot.AuthResponse = append([]byte(nil), h.AuthResponse...)
		snapshot.Attrs = append([]byte(nil), h.Attrs...)
		for i := range in {
			in[i] ^= 0xff
		}
		if !bytes.Equal(snapshot.AuthResponse, h.AuthResponse) || !bytes.Equal(snapshot.Attrs, h.Attrs) {
			t.Fatalf("handshake response aliases its input: %+v", h)
		}
		enc := AppendHandshakeResponse(nil, h)
		// AppendHandshakeResponse writes the auth response length-prefixed;
		// the pre-4.1 NUL-terminated form (neither SECURE_CONNECTION nor
		// PLUGIN_AUTH_LENENC_CLIENT_DATA) is decode-only.
		if h.Capabilities&(ClientSecureConnection|ClientPluginAuthLenencClientData) == 0 {
			return
		}
		h2, err := ParseHandshakeResponse(enc)
		if err != nil {
			t.Fatalf("re-encoded handshake response does not parse: %v\n%+v\n%x", err, h, enc)
		}
		if !equalHandshakeResponse(h, h2) {
			t.Fatalf("handshake response round trip:\n got %+v\nwant %+v", h2, h)
		}
	})
}

func equalHandshakeResponse(a, b *HandshakeResponse) bool {
	return a.Capabilities == b.Capabilities && a.MaxPacket == b.MaxPacket && a.Charset == b.Charset &&
		a.User == b.User && bytes.Equal(a.AuthResponse, b.AuthResponse) && a.Database == b.Database &&
		a.AuthPlugin == b.AuthPlugin && bytes.Equal(a.Attrs, b.Attrs)
}

func FuzzParseAuthSwitch(f *testing.F) {
	f.Add(AppendAuthSwitch(nil, "mysql_native_password", append(seedSalt(), 0)))
	f.Add(AppendAuthSwitch(nil, "caching_sha2_password", append(seedSalt(), 0)))
	f.Add(AppendAuthSwitch(nil, "mysql_clear_password", nil))
	f.Add([]byte{HeaderAuthSwitch})
	f.Add([]byte{HeaderAuthSwitch, 'x'})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		in := append([]byte(nil), p...)
		plugin, data, err := ParseAuthSwitch(in)
		if err != nil {
			return
		}
		keep := append([]byte(nil), data...)
		for i := range in {
			in[i] ^= 0xff
		}
		if !bytes.Equal(keep, data) {
			t.Fatal("auth switch data aliases its input")
		}
		// The scramble travels NUL-terminated: callers append the NUL
		// (AppendAuthSwitch writes data as given), ParseAuthSwitch strips it.
		enc := AppendAuthSwitch(nil, plugin, append(append([]byte(nil), data...), 0))
		plugin2, data2, err := ParseAuthSwitch(enc)
		if err != nil {
			t.Fatalf("re-encoded auth switch does not parse: %v", err)
		}
		if plugin2 != plugin || !bytes.Equal(data2, data) {
			t.Fatalf("auth switch round trip: got (%q, %x), want (%q, %x)", plugin2, data2, plugin, data)
		}
	})
}

// appendChangeUser encodes COM_CHANGE_USER for caps (the package has a
// decoder only; the proxy never sends one).
func appendChangeUser(b []byte, h *HandshakeResponse, caps uint32) []byte {
	b = append(b, ComChangeUser)
	b = append(b, h.User...)
	b = append(b, 0)
	if caps&ClientSecureConnection != 0 {
		b = append(b, byte(len(h.AuthResponse)))
		b = append(b, h.AuthResponse...)
	} else {
		b = append(b, h.AuthResponse...)
		b = append(b, 0)
	}
	b = append(b, h.Database...)
	b = append(b, 0)
	b = AppendUint16(b, uint16(h.Charset))
	if caps&ClientPluginAuth != 0 {
		b = append(b, h.AuthPlugin...)
		b = append(b, 0)
	}
	if caps&ClientConnectAttrs != 0 {
		b = AppendLenEncString(b, h.Attrs)
	}
	return b
}

func FuzzParseChangeUser(f *testing.F) {
	full := ClientProtocol41 | ClientSecureConnection | ClientPluginAuth | ClientConnectAttrs | ClientPluginAuthLenencClientData
	f.Add(appendChangeUser(nil, &HandshakeResponse{User: "app", AuthResponse: bytes.Repeat([]byte{7}, 20),
		Database: "basic", Charset: 45, AuthPlugin: "mysql_native_password",
		Attrs: connAttrs("_client_name", "Go-MySQL-Driver")}, full), full)
	f.Add(appendChangeUser(nil, &HandshakeResponse{User: "root", AuthResponse: []byte("x"), Charset: 8}, ClientProtocol41), ClientProtocol41)
	f.Add([]byte{ComChangeUser, 'u', 0, 0, 0}, ClientProtocol41|ClientSecureConnection)
	f.Add([]byte{ComChangeUser}, full)
	f.Add([]byte{ComChangeUser, 'u', 0, 3, 'a'}, full) // auth response cut short
	f.Fuzz(func(t *testing.T, p []byte, caps uint32) {
		in := append([]byte(nil), p...)
		h, err := ParseChangeUser(in, caps)
		if err != nil {
			if h != nil {
				t.Fatalf("ParseChangeUser returned both %+v and %v", h, err)
			}
			return
		}
		snapshot := *h
		snapshot.AuthResponse = append([]byte(nil), h.AuthResponse...)
		snapshot.Attrs = append([]byte(nil), h.Attrs...)
		for i := range in {
			in[i] ^= 0xff
		}
		if !equalHandshakeResponse(&snapshot, h) {
			t.Fatalf("change user aliases its input: %+v", h)
		}
		if h.Capabilities != caps {
			t.Fatalf("capabilities %#x, want %#x", h.Capabilities, caps)
		}
		enc := appendChangeUser(nil, h, caps)
		h2, err := ParseChangeUser(enc, caps)
		if err != nil {
			t.Fatalf("re-encoded change user does not parse: %v\n%+v", err, h)
		}
		if !equalHandshakeResponse(h, h2) {
			t.Fatalf("change user round trip:\n got %+v\nwant %+v", h2, h)
		}
	})
}

// ---------------------------------------------------------------------------
// OK / ERR / EOF and session state

func FuzzParseOK(f *testing.F) {
	oks, _ := seedOKs()
	for _, p := range oks {
		f.Add(p)
	}
	f.Add(seedEOF())
	f.Add([]byte{0})
	f.Add([]byte{0, 0xfe, 1, 2, 3})
	f.Add([]byte{0, 0xfb, 0xfb, 0, 0x40, 0, 0, 0xfc, 0xff})
	f.Fuzz(func(t *testing.T, p []byte) {
		_ = IsOK(p)
		_ = IsEOF(p)
		_ = IsErr(p)
		if w, s, ok := ParseEOF(p); ok {
			enc := AppendEOF(nil, w, s)
			if w2, s2, ok := ParseEOF(enc); !ok || w2 != w || s2 != s&^StatusSessionStateChange {
				t.Fatalf("EOF round trip: got %d %#x %v, want %d %#x", w2, s2, ok, w, s)
			}
		}
		for _, caps := range []uint32{0, ClientSessionTrack, ClientSessionTrack | ClientDeprecateEOF} {
			ok, valid := ParseOK(p, caps)
			if !valid {
				continue
			}
			if ok.SessionState != nil && caps&ClientSessionTrack == 0 {
				t.Fatalf("caps %#x: session state without CLIENT_SESSION_TRACK", caps)
			}
			if len(ok.SessionState) > 0 {
				StateChanges(ok.SessionState, func(StateChange) {})
			}
			header := p[0]
			enc := AppendOK(nil, header, &ok, caps)
			ok2, valid := ParseOK(enc, caps)
			if !valid {
				t.Fatalf("caps %#x: re-encoded OK does not parse: %+v\n%x", caps, ok, enc)
			}
			want := ok
			if len(ok.SessionState) == 0 {
				// AppendOK never announces a state change it does not carry.
				want.Status &^= StatusSessionStateChange
			}
			if !equalOK(&want, &ok2) {
				t.Fatalf("caps %#x: OK round trip:\n got %+v\nwant %+v", caps, ok2, want)
			}
			if enc[0] != header {
				t.Fatalf("header %#x became %#x", header, enc[0])
			}
		}
	})
}

func equalOK(a, b *OKPacket) bool {
	return a.AffectedRows == b.AffectedRows && a.LastInsertID == b.LastInsertID && a.Status == b.Status &&
		a.Warnings == b.Warnings && bytes.Equal(a.Info, b.Info) && bytes.Equal(a.SessionState, b.SessionState)
}

// appendStateChange encodes one entry of a session-state-change block.
func appendStateChange(b []byte, ch StateChange) []byte {
	var data []byte
	switch ch.Type {
	case TrackSystemVariables:
		data = AppendLenEncString(AppendLenEncString(nil, ch.Name), ch.Value)
	case TrackSchema, TrackStateChange:
		data = AppendLenEncString(nil, ch.Name)
	default:
		data = ch.Name
	}
	return AppendLenEncString(append(b, ch.Type), data)
}

func FuzzStateChanges(f *testing.F) {
	f.Add(sessionStateBlock())
	f.Add([]byte{TrackSchema, 5, 4, 't', 'e', 's', 't'})
	f.Add([]byte{TrackSystemVariables, 3, 1, 'a', 0xfb})
	f.Add([]byte{TrackSystemVariables, 2, 5, 'a'})
	f.Add([]byte{TrackTransactionState})
	f.Add([]byte{0x7f, 0xfc, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, block []byte) {
		var got []StateChange
		ok := StateChanges(block, func(ch StateChange) {
			got = append(got, StateChange{Type: ch.Type,
				Name: append([]byte(nil), ch.Name...), Value: append([]byte(nil), ch.Value...)})
		})
		if !ok {
			return
		}
		var enc []byte
		for _, ch := range got {
			enc = appendStateChange(enc, ch)
		}
		var again []StateChange
		if !StateChanges(enc, func(ch StateChange) {
			again = append(again, StateChange{Type: ch.Type,
				Name: append([]byte(nil), ch.Name...), Value: append([]byte(nil), ch.Value...)})
		}) {
			t.Fatalf("re-encoded block does not parse: %x", enc)
		}
		if len(again) != len(got) {
			t.Fatalf("round trip: %d entries, want %d", len(again), len(got))
		}
		for i := range got {
			if got[i].Type != again[i].Type || !bytes.Equal(got[i].Name, again[i].Name) || !bytes.Equal(got[i].Value, again[i].Value) {
				t.Fatalf("entry %d: got %+v, want %+v", i, again[i], got[i])
			}
		}
	})
}

func FuzzParseErr(f *testing.F) {
	for _, p := range seedErrs() {
		f.Add(p)
	}
	f.Add([]byte{0xff})
	f.Add([]byte{0xff, 1, 2, '#', 'H', 'Y'})
	f.Fuzz(func(t *testing.T, p []byte) {
		e := ParseErr(p)
		if e == nil {
			t.Fatal("ParseErr returned nil")
		}
		_ = e.Error()
		if len(e.State) != 5 {
			t.Fatalf("SQLSTATE %q is not 5 bytes", e.State)
		}
		e2 := ParseErr(AppendErr(nil, e))
		if *e2 != *e {
			t.Fatalf("ERR round trip: got %+v, want %+v", e2, e)
		}
	})
}

// ---------------------------------------------------------------------------
// Relay

// relayClientInput is what a client sends during a LOAD DATA LOCAL exchange:
// the file in one packet, then the empty packet that ends it.
var relayClientInput = stream(2, []byte("1,a\n2,b\n"), nil)

func FuzzRelay(f *testing.F) {
	const (
		cDep   = 1 << 0 // client CLIENT_DEPRECATE_EOF
		cTrack = 1 << 1 // client CLIENT_SESSION_TRACK
		bDep   = 1 << 2 // backend CLIENT_DEPRECATE_EOF
		bTrack = 1 << 3 // backend CLIENT_SESSION_TRACK
		local  = 1 << 4 // client accepts LOAD DATA LOCAL
		// bits 5-7 pick the relay method: 0-3 Query, 4 Single, 5 FieldList,
		// 6 Rows, 7 Prepare.
	)
	add := func(sel byte, s []byte) { f.Add(append([]byte{sel}, s...)) }
	oks, tracked := seedOKs()
	for i, ok := range oks {
		sel := byte(0)
		if tracked[i] {
			sel = cTrack | bTrack
		}
		add(sel, frame(1, ok))
		add(sel|cDep|bDep, frame(1, ok))
		add(sel&^cTrack, frame(1, ok)) // backend tracks, client does not
	}
	for _, sel := range []byte{0, cDep | bDep, bDep, cDep, cDep | cTrack | bDep | bTrack} {
		add(sel, resultSetStream(sel&bDep != 0, false))
		// Multi-result: a result set flagged "more results", then an OK.
		add(sel, append(resultSetStream(sel&bDep != 0, true), frame(6+boolByte(sel&bDep == 0), oks[0])...))
	}
	add(0, frame(1, seedErrs()[1]))
	// A result set ended by an ERR mid-rows.
	add(bDep, stream(1, []byte{1}, columnDef("a", TypeLong), connAttrs("1"), seedErrs()[0]))
	// Cursor open under DEPRECATE_EOF for an old client: metadata plus one
	// terminator with SERVER_STATUS_CURSOR_EXISTS.
	add(bDep, stream(1, []byte{1}, columnDef("a", TypeLong),
		AppendOK(nil, HeaderEOF, &OKPacket{Status: StatusAutocommit | StatusCursorExists}, 0)))
	// LOAD DATA LOCAL request, then the server's OK.
	infile := stream(1, append([]byte{HeaderLocalInfile}, "/tmp/data.csv"...))
	add(local, append(infile, frame(4, oks[1])...))
	add(0, append(infile, frame(3, oks[0])...))
	// Single: COM_STATISTICS reply, COM_PING OK.
	add(4<<5, frame(1, []byte("Uptime: 10  Threads: 1  Questions: 4")))
	add(4<<5|cDep|bDep|cTrack|bTrack, frame(1, oks[3]))
	// FieldList: column definitions then EOF.
	add(5<<5, stream(1, columnDef("a", TypeLong), columnDef("b", TypeVarString), seedEOF()))
	add(5<<5|cDep, stream(1, columnDef("a", TypeLong), seedEOF()))
	// Rows (COM_STMT_FETCH): binary rows then EOF with LAST_ROW_SENT.
	add(6<<5, stream(1, []byte{0, 0, 1, 0, 0, 0}, AppendEOF(nil, 0, StatusCursorExists|StatusLastRowSent)))
	// Prepare: OK, 1 parameter and 1 column definition, with EOFs.
	prepOK := []byte{0, 9, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0}
	add(7<<5, stream(1, prepOK, columnDef("?", TypeVarString), seedEOF(), columnDef("a", TypeLong), seedEOF()))
	add(7<<5|bDep|cDep, stream(1, prepOK, columnDef("?", TypeVarString), columnDef("a", TypeLong)))
	add(7<<5|bDep, stream(1, prepOK, columnDef("?", TypeVarString), columnDef("a", TypeLong)))
	add(7<<5, frame(1, seedErrs()[1]))
	add(0, nil)
	add(0, []byte{0, 0, 0, 1}) // empty response packet
	add(0, frame(1, []byte{0xfc, 0xff, 0xff}))

	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		sel, in := data[0], data[1:]
		capsOf := func(dep, track bool) uint32 {
			c := ClientProtocol41 | ClientSecureConnection | ClientMultiResults | ClientPSMultiResults
			if dep {
				c |= ClientDeprecateEOF
			}
			if track {
				c |= ClientSessionTrack
			}
			return c
		}
		backendIn := bytes.NewReader(in)
		var out bytes.Buffer
		r := &Relay{
			Client:      NewConn(&memConn{r: bytes.NewReader(relayClientInput), w: &out}),
			Backend:     NewConn(&memConn{r: backendIn}),
			ClientCaps:  capsOf(sel&cDep != 0, sel&cTrack != 0),
			BackendCaps: capsOf(sel&bDep != 0, sel&bTrack != 0),
			LocalFiles:  sel&local != 0,
		}
		r.Client.SetSeq(1)
		r.Backend.SetSeq(1)
		var err error
		switch m := sel >> 5; {
		case m < 4:
			err = r.Query()
		case m == 4:
			err = r.Single()
		case m == 5:
			err = r.FieldList()
		case m == 6:
			err = r.Rows()
		default:
			_, _, _, _, err = r.Prepare(0x01020304)
		}
		if err != nil {
			var re *RelayError
			if !errors.As(err, &re) {
				t.Fatalf("relay error %T is not a *RelayError: %v", err, err)
			}
			_ = err.Error()
			return
		}
		if r.Client.Pending() != 0 {
			t.Fatalf("relay returned with %d bytes of client output unflushed", r.Client.Pending())
		}
		if r.Info.LocalInfile {
			return // the client's own packets advance the sequence mid-response
		}
		// The client output is a well-formed packet stream with consecutive
		// sequence ids.
		frames := refFrames(t, out.Bytes())
		for i, fr := range frames {
			if fr.seq != byte(1+i) {
				t.Fatalf("client frame %d has sequence id %d, want %d", i, fr.seq, byte(1+i))
			}
		}
		// A relay that reports success has sent a complete response: for
		// Query, FieldList and Rows it ends with OK, EOF or ERR.
		if m := sel >> 5; m < 4 || m == 5 || m == 6 {
			if len(frames) == 0 {
				t.Fatal("relay succeeded without sending the client anything")
			}
			last := frames[len(frames)-1].payload
			if len(last) == 0 || (last[0] != HeaderOK && last[0] != HeaderEOF && last[0] != HeaderErr) {
				t.Fatalf("relay succeeded but the response ends with %x, not OK/EOF/ERR", trunc(last))
			}
		}
		// When both sides agree on the flags, packets pass unchanged: the
		// client receives exactly what was consumed from the backend, but for
		// the sequence ids (and the statement id a Prepare rewrites).
		if (r.ClientCaps^r.BackendCaps)&(ClientDeprecateEOF|ClientSessionTrack) == 0 && sel>>5 != 7 {
			consumed := len(in) - backendIn.Len() - r.Backend.Buffered()
			if !equalIgnoringSeq(out.Bytes(), in[:consumed]) {
				t.Fatalf("relay with equal flags changed the stream:\n got %x\nwant %x", trunc(out.Bytes()), trunc(in[:consumed]))
			}
		}
	})
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

type rawFrame struct {
	seq     byte
	payload []byte
}

// refFrames splits a stream that must consist of complete frames.
func refFrames(t *testing.T, b []byte) []rawFrame {
	t.Helper()
	var out []rawFrame
	for len(b) > 0 {
		if len(b) < 4 {
			t.Fatalf("client output ends with a partial header %x", b)
		}
		n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
		if len(b)-4 < n {
			t.Fatalf("client output ends with a partial frame: %d of %d bytes", len(b)-4, n)
		}
		out = append(out, rawFrame{seq: b[3], payload: b[4 : 4+n]})
		b = b[4+n:]
	}
	return out
}

// equalIgnoringSeq compares two frame streams, ignoring sequence ids.
func equalIgnoringSeq(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = append([]byte(nil), a...), append([]byte(nil), b...)
	for pos := 0; pos+4 <= len(a); {
		n := int(a[pos]) | int(a[pos+1])<<8 | int(a[pos+2])<<16
		a[pos+3], b[pos+3] = 0, 0
		pos += 4 + n
	}
	return bytes.Equal(a, b)
}

// ---------------------------------------------------------------------------
// Round trips across the 16 MB frame boundary.

// pipePair returns the two ends of an in-memory connection as Conns.
func pipePair(t *testing.T) (w, r *Conn) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return NewConn(a), NewConn(b)
}

// patterned returns n bytes that differ at every frame offset, so a dropped,
// duplicated or misplaced byte is caught.
func patterned(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i ^ i>>8 ^ i>>16 ^ i>>24)
	}
	return p
}

var boundarySizes = []int{0, 1, MaxPayload - 1, MaxPayload, MaxPayload + 1, 2*MaxPayload + 5}

// framesOf is the frame sizes WritePacket splits an n-byte payload into.
func framesOf(n int) []int {
	var fs []int
	for n >= MaxPayload {
		fs = append(fs, MaxPayload)
		n -= MaxPayload
	}
	return append(fs, n)
}

func TestPacketRoundTripAcrossMaxPayload(t *testing.T) {
	for _, size := range boundarySizes {
		t.Run(sizeName(size), func(t *testing.T) {
			payload := patterned(size)
			w, r := pipePair(t)
			w.SetSeq(3)
			errc := make(chan error, 1)
			go func() {
				// Two packets back to back: the boundary of the first must
				// not swallow or shift the second.
				err := w.WritePacket(payload)
				if err == nil {
					err = w.WritePacket([]byte{ComPing})
				}
				if err == nil {
					err = w.Flush()
				}
				errc <- err
			}()
			got, err := r.ReadPacket()
			if err != nil {
				t.Fatalf("ReadPacket: %v", err)
			}
			if !bytes.Equal(got, payload) {
				t.Fatalf("payload of %d bytes came back as %d bytes (first difference at %d)", size, len(got), firstDiff(got, payload))
			}
			frames := len(framesOf(size))
			if r.Seq() != byte(3+frames) {
				t.Fatalf("after %d frames next seq is %d, want %d", frames, r.Seq(), 3+frames)
			}
			next, err := r.ReadPacket()
			if err != nil || !bytes.Equal(next, []byte{ComPing}) {
				t.Fatalf("packet after the big one: %x, %v", next, err)
			}
			if err := <-errc; err != nil {
				t.Fatalf("write: %v", err)
			}
		})
	}
}

func TestFrameRoundTripAcrossMaxPayload(t *testing.T) {
	for _, size := range boundarySizes {
		t.Run(sizeName(size), func(t *testing.T) {
			payload := patterned(size)
			w, r := pipePair(t)
			errc := make(chan error, 1)
			go func() {
				err := w.WritePacket(payload)
				if err == nil {
					err = w.Flush()
				}
				errc <- err
			}()
			var joined []byte
			for i, want := range framesOf(size) {
				p, more, err := r.ReadFrame()
				if err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if len(p) != want {
					t.Fatalf("frame %d: %d bytes, want %d", i, len(p), want)
				}
				if more != (want == MaxPayload) {
					t.Fatalf("frame %d (%d bytes): more = %v", i, len(p), more)
				}
				if r.Seq() != byte(i+1) {
					t.Fatalf("frame %d: next seq %d, want %d", i, r.Seq(), i+1)
				}
				joined = append(joined, p...)
			}
			if !bytes.Equal(joined, payload) {
				t.Fatalf("frames joined differ from the payload at %d", firstDiff(joined, payload))
			}
			if err := <-errc; err != nil {
				t.Fatalf("write: %v", err)
			}
		})
	}
}

// TestComposedPacketRoundTripAcrossMaxPayload covers BeginPacket/EndPacket,
// which split a composed packet that outgrew one frame.
func TestComposedPacketRoundTripAcrossMaxPayload(t *testing.T) {
	for _, size := range boundarySizes {
		t.Run(sizeName(size), func(t *testing.T) {
			payload := patterned(size)
			w, r := pipePair(t)
			errc := make(chan error, 1)
			go func() {
				err := w.EndPacket(append(w.BeginPacket(), payload...))
				if err == nil {
					err = w.Flush()
				}
				errc <- err
			}()
			got, err := r.ReadPacket()
			if err != nil {
				t.Fatalf("ReadPacket: %v", err)
			}
			if !bytes.Equal(got, payload) {
				t.Fatalf("payload of %d bytes came back as %d bytes (first difference at %d)", size, len(got), firstDiff(got, payload))
			}
			if err := <-errc; err != nil {
				t.Fatalf("write: %v", err)
			}
		})
	}
}

// TestReadPacketTooLarge: a joined packet beyond MaxPacket is refused.
func TestReadPacketTooLarge(t *testing.T) {
	w, r := pipePair(t)
	r.MaxPacket = 1 << 20
	go func() {
		_ = w.WritePacket(patterned(2*MaxPayload + 5))
		_ = w.Flush()
		w.Close()
	}()
	if p, err := r.ReadPacket(); !errors.Is(err, ErrPacketTooLarge) {
		t.Fatalf("ReadPacket = %d bytes, %v; want ErrPacketTooLarge", len(p), err)
	}
}

// TestReadPacketSingleFrameOverMaxPacket: MaxPacket is only checked between
// frames, so a packet that fits one frame is returned whatever its size.
func TestReadPacketSingleFrameOverMaxPacket(t *testing.T) {
	w, r := pipePair(t)
	r.MaxPacket = 1 << 20
	go func() {
		_ = w.WritePacket(patterned(2 << 20))
		_ = w.Flush()
		w.Close()
	}()
	if p, err := r.ReadPacket(); !errors.Is(err, ErrPacketTooLarge) {
		t.Fatalf("MaxPacket = 1 MiB, ReadPacket = %d bytes, %v; want ErrPacketTooLarge", len(p), err)
	}
}

// TestReadHeaderDoesNotPreallocate: four bytes announcing a 16 MB frame make
// the reader allocate the whole frame before any of it arrives.
func TestReadHeaderDoesNotPreallocate(t *testing.T) {
	c := NewConn(&memConn{r: bytes.NewReader([]byte{0xff, 0xff, 0xff, 0})})
	c.MaxPacket = 1 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := c.ReadPacket()
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("ReadPacket of a bare header succeeded")
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Fatalf("reading a 4-byte header allocated %d bytes", got)
	}
}

func sizeName(n int) string {
	switch n {
	case MaxPayload - 1:
		return "MaxPayload-1"
	case MaxPayload:
		return "MaxPayload"
	case MaxPayload + 1:
		return "MaxPayload+1"
	case 2*MaxPayload + 5:
		return "2*MaxPayload+5"
	}
	return string(rune('0' + n))
}

func firstDiff(a, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestRelayLargeRows relays rows that span several frames (beyond what the
// fuzzer can build), including one whose first byte is 0xfe like a
// terminator, for each combination of EOF styles.
func TestRelayLargeRows(t *testing.T) {
	bigText := AppendLenEncString(nil, patterned(1<<24+5)) // starts with 0xfe
	rows := [][]byte{bigText, AppendLenEncString(nil, patterned(MaxPayload-4)), connAttrs("small")}
	for _, sel := range []struct{ client, backend bool }{{false, false}, {true, true}, {false, true}, {true, false}} {
		t.Run(fmt.Sprintf("clientDeprecateEOF=%v,backendDeprecateEOF=%v", sel.client, sel.backend), func(t *testing.T) {
			var in bytes.Buffer
			w := NewConn(&memConn{w: &in})
			w.SetSeq(1)
			_ = w.WritePacket([]byte{1})
			_ = w.WritePacket(columnDef("a", TypeLongBlob))
			if !sel.backend {
				_ = w.WritePacket(seedEOF())
			}
			for _, r := range rows {
				_ = w.WritePacket(r)
			}
			if sel.backend {
				_ = w.WritePacket(AppendOK(nil, HeaderEOF, &OKPacket{Status: StatusAutocommit}, 0))
			} else {
				_ = w.WritePacket(seedEOF())
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			caps := func(dep bool) uint32 {
				if dep {
					return ClientProtocol41 | ClientDeprecateEOF
				}
				return ClientProtocol41
			}
			var out bytes.Buffer
			r := &Relay{
				Client: NewConn(&memConn{w: &out}), Backend: NewConn(&memConn{r: bytes.NewReader(in.Bytes())}),
				ClientCaps: caps(sel.client), BackendCaps: caps(sel.backend),
			}
			r.Client.SetSeq(1)
			if err := r.Query(); err != nil {
				t.Fatalf("relay: %v", err)
			}
			if r.Info.Rows != uint64(len(rows)) || !r.Info.ResultSet {
				t.Fatalf("relay counted %d rows (result set %v), want %d", r.Info.Rows, r.Info.ResultSet, len(rows))
			}
			c := NewConn(&memConn{r: bytes.NewReader(out.Bytes())})
			read := func(what string) []byte {
				t.Helper()
				p, err := c.ReadPacket()
				if err != nil {
					t.Fatalf("client reading %s: %v", what, err)
				}
				return p
			}
			read("column count")
			read("column definition")
			if !sel.client {
				if p := read("column EOF"); !IsEOF(p) {
					t.Fatalf("client got %x, want EOF after the columns", trunc(p))
				}
			}
			for i, want := range rows {
				if got := read("row"); !bytes.Equal(got, want) {
					t.Fatalf("row %d: got %d bytes, want %d (first difference at %d)", i, len(got), len(want), firstDiff(got, want))
				}
			}
			if p := read("terminator"); !IsEOF(p) {
				t.Fatalf("client got %x, want the terminator", trunc(p))
			}
			if _, err := c.ReadPacket(); err != io.EOF {
				t.Fatalf("client got more after the terminator: %v", err)
			}
		})
	}
}
