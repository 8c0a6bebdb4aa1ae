package mysql

import (
	"bytes"
	"fmt"
)

// Greeting is the server's initial handshake packet (protocol version 10).
type Greeting struct {
	ServerVersion string
	ConnectionID  uint32
	AuthData      []byte // scramble: part 1 (8 bytes) + part 2 (12 bytes)
	Capabilities  uint32
	Charset       byte
	Status        uint16
	AuthPlugin    string
}

// AppendGreeting appends the payload of a handshake v10 packet.
func AppendGreeting(b []byte, g *Greeting) []byte {
	b = append(b, 10)
	b = append(b, g.ServerVersion...)
	b = append(b, 0)
	b = AppendUint32(b, g.ConnectionID)
	b = append(b, g.AuthData[:8]...)
	b = append(b, 0)
	b = AppendUint16(b, uint16(g.Capabilities))
	b = append(b, g.Charset)
	b = AppendUint16(b, g.Status)
	b = AppendUint16(b, uint16(g.Capabilities>>16))
	b = append(b, byte(len(g.AuthData)+1))
	b = append(b, make([]byte, 10)...)
	b = append(b, g.AuthData[8:]...)
	b = append(b, 0)
	b = append(b, g.AuthPlugin...)
	return append(b, 0)
}

// ParseGreeting decodes a server's handshake v10 packet.
func ParseGreeting(p []byte) (*Greeting, error) {
	if len(p) > 0 && p[0] == HeaderErr {
		return nil, ParseErr(p)
	}
	r := NewReader(p)
	if v := r.Byte(); v != 10 {
		return nil, fmt.Errorf("unsupported handshake protocol version %d: %w", v, ErrMalformed)
	}
	g := &Greeting{}
	g.ServerVersion = string(r.NulString())
	g.ConnectionID = r.Uint32()
	part1 := r.Bytes(8)
	r.Skip(1)
	capLow := r.Uint16()
	if !r.OK() {
		return nil, fmt.Errorf("handshake: %w", ErrMalformed)
	}
	g.AuthData = append(g.AuthData, part1...)
	g.Capabilities = uint32(capLow)
	if r.Len() == 0 {
		return g, nil
	}
	g.Charset = r.Byte()
	g.Status = r.Uint16()
	g.Capabilities |= uint32(r.Uint16()) << 16
	authLen := int(r.Byte())
	r.Skip(10)
	if g.Capabilities&ClientSecureConnection != 0 {
		n := authLen - 8
		if n < 13 {
			n = 13
		}
		part2 := r.Bytes(n)
		// The last byte of part 2 is a NUL terminator, not scramble.
		if len(part2) > 0 && part2[len(part2)-1] == 0 {
			part2 = part2[:len(part2)-1]
		}
		g.AuthData = append(g.AuthData, part2...)
	}
	if g.Capabilities&ClientPluginAuth != 0 && r.Len() > 0 {
		name := r.Rest()
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		g.AuthPlugin = string(name)
	}
	if !r.OK() {
		return nil, fmt.Errorf("handshake: %w", ErrMalformed)
	}
	return g, nil
}

// HandshakeResponse is the client's reply to the greeting (protocol 4.1).
type HandshakeResponse struct {
	Capabilities uint32
	MaxPacket    uint32
	Charset      byte
	User         string
	AuthResponse []byte
	Database     string
	AuthPlugin   string
	Attrs        []byte // raw connection attributes block
}

// sslRequestLen is the length of an SSLRequest: a handshake response cut
// short after the filler.
const sslRequestLen = 32

// IsSSLRequest reports whether p is an SSLRequest packet.
func IsSSLRequest(p []byte) bool {
	if len(p) != sslRequestLen {
		return false
	}
	caps := uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2])<<16 | uint32(p[3])<<24
	return caps&ClientSSL != 0
}

// ParseHandshakeResponse decodes a HandshakeResponse41.
func ParseHandshakeResponse(p []byte) (*HandshakeResponse, error) {
	r := NewReader(p)
	h := &HandshakeResponse{}
	h.Capabilities = r.Uint32()
	if h.Capabilities&ClientProtocol41 == 0 {
		return nil, fmt.Errorf("client does not speak protocol 4.1: %w", ErrMalformed)
	}
	h.MaxPacket = r.Uint32()
	h.Charset = r.Byte()
	r.Skip(23)
	h.User = string(r.NulString())
	switch {
	case h.Capabilities&ClientPluginAuthLenencClientData != 0:
		h.AuthResponse = r.LenEncString()
	case h.Capabilities&ClientSecureConnection != 0:
		n := int(r.Byte())
		h.AuthResponse = r.Bytes(n)
	default:
		h.AuthResponse = r.NulString()
	}
	if !r.OK() {
		return nil, fmt.Errorf("handshake response: %w", ErrMalformed)
	}
	if h.Capabilities&ClientConnectWithDB != 0 && r.Len() > 0 {
		h.Database = string(r.NulString())
	}
	if h.Capabilities&ClientPluginAuth != 0 && r.Len() > 0 {
		h.AuthPlugin = lastNulString(&r)
	}
	if h.Capabilities&ClientConnectAttrs != 0 && r.Len() > 0 {
		h.Attrs = append([]byte(nil), r.LenEncString()...)
	}
	if !r.OK() {
		return nil, fmt.Errorf("handshake response: %w", ErrMalformed)
	}
	h.AuthResponse = append([]byte(nil), h.AuthResponse...)
	return h, nil
}

// AppendHandshakeResponse appends the payload of a HandshakeResponse41.
func AppendHandshakeResponse(b []byte, h *HandshakeResponse) []byte {
	b = AppendUint32(b, h.Capabilities)
	b = AppendUint32(b, h.MaxPacket)
	b = append(b, h.Charset)
	b = append(b, make([]byte, 23)...)
	b = append(b, h.User...)
	b = append(b, 0)
	if h.Capabilities&ClientPluginAuthLenencClientData != 0 {
		b = AppendLenEncString(b, h.AuthResponse)
	} else {
		b = append(b, byte(len(h.AuthResponse)))
		b = append(b, h.AuthResponse...)
	}
	if h.Capabilities&ClientConnectWithDB != 0 {
		b = append(b, h.Database...)
		b = append(b, 0)
	}
	if h.Capabilities&ClientPluginAuth != 0 {
		b = append(b, h.AuthPlugin...)
		b = append(b, 0)
	}
	if h.Capabilities&ClientConnectAttrs != 0 {
		b = AppendLenEncString(b, h.Attrs)
	}
	return b
}

// AppendSSLRequest appends the payload of an SSLRequest.
func AppendSSLRequest(b []byte, caps uint32, maxPacket uint32, charset byte) []byte {
	b = AppendUint32(b, caps|ClientSSL)
	b = AppendUint32(b, maxPacket)
	b = append(b, charset)
	return append(b, make([]byte, 23)...)
}

// AppendAuthSwitch appends an AuthSwitchRequest payload.
func AppendAuthSwitch(b []byte, plugin string, data []byte) []byte {
	b = append(b, HeaderAuthSwitch)
	b = append(b, plugin...)
	b = append(b, 0)
	return append(b, data...)
}

// ParseAuthSwitch decodes an AuthSwitchRequest payload.
func ParseAuthSwitch(p []byte) (plugin string, data []byte, err error) {
	r := NewReader(p)
	r.Byte()
	name := r.NulString()
	if !r.OK() {
		return "", nil, fmt.Errorf("auth switch request: %w", ErrMalformed)
	}
	data = r.Rest()
	if len(data) > 0 && data[len(data)-1] == 0 {
		data = data[:len(data)-1]
	}
	return string(name), append([]byte(nil), data...), nil
}

// ParseChangeUser decodes COM_CHANGE_USER (without the command byte is not
// assumed: p starts with the command byte).
func ParseChangeUser(p []byte, caps uint32) (*HandshakeResponse, error) {
	r := NewReader(p)
	r.Byte()
	h := &HandshakeResponse{Capabilities: caps}
	h.User = string(r.NulString())
	if caps&ClientSecureConnection != 0 {
		n := int(r.Byte())
		h.AuthResponse = append([]byte(nil), r.Bytes(n)...)
	} else {
		h.AuthResponse = append([]byte(nil), r.NulString()...)
	}
	h.Database = string(r.NulString())
	if !r.OK() {
		return nil, fmt.Errorf("change user: %w", ErrMalformed)
	}
	if r.Len() >= 2 {
		cs := r.Uint16()
		h.Charset = byte(cs)
	}
	if caps&ClientPluginAuth != 0 && r.Len() > 0 {
		h.AuthPlugin = lastNulString(&r)
	}
	if caps&ClientConnectAttrs != 0 && r.Len() > 0 {
		h.Attrs = append([]byte(nil), r.LenEncString()...)
	}
	if !r.OK() {
		return nil, fmt.Errorf("change user: %w", ErrMalformed)
	}
	return h, nil
}

// lastNulString reads a NUL-terminated string whose NUL some clients omit
// when it is the packet's last field.
func lastNulString(r *Reader) string {
	rest := r.Rest()
	if i := bytes.IndexByte(rest, 0); i >= 0 {
		r.Skip(i + 1)
		return string(rest[:i])
	}
	r.Skip(len(rest))
	return string(rest)
}
