package mysql

// OK, ERR and EOF packets, and the session state changes an OK can carry.

// OKPacket is a decoded OK packet (or an EOF-as-OK terminator).
type OKPacket struct {
	AffectedRows uint64
	LastInsertID uint64
	Status       uint16
	Warnings     uint16
	Info         []byte
	// SessionState is the raw session-state-change block (present only when
	// CLIENT_SESSION_TRACK was negotiated and StatusSessionStateChange is set).
	SessionState []byte
}

// IsOK reports whether payload is an OK packet (0x00 header).
func IsOK(p []byte) bool { return len(p) >= 7 && p[0] == HeaderOK }

// IsErr reports whether payload is an ERR packet.
func IsErr(p []byte) bool { return len(p) > 0 && p[0] == HeaderErr }

// IsEOF reports whether payload is an EOF packet or, with
// CLIENT_DEPRECATE_EOF, an OK packet with the 0xfe header ending a result.
// Rows may also start with 0xfe (a length-encoded string of 2^24 or more
// bytes), but such a row is never shorter than 9 bytes... unless it is an OK
// terminator, which is bounded by MaxPayload; the caller distinguishes by
// length as the protocol specifies.
func IsEOF(p []byte) bool { return len(p) > 0 && len(p) < MaxPayload && p[0] == HeaderEOF }

// ParseOK decodes an OK packet (header 0x00 or 0xfe) sent with the given
// capabilities.
func ParseOK(p []byte, caps uint32) (OKPacket, bool) {
	var ok OKPacket
	r := NewReader(p)
	r.Byte()
	ok.AffectedRows = r.LenEncInt()
	ok.LastInsertID = r.LenEncInt()
	ok.Status = r.Uint16()
	ok.Warnings = r.Uint16()
	if !r.OK() {
		return ok, false
	}
	if caps&ClientSessionTrack != 0 {
		if r.Len() > 0 {
			ok.Info = r.LenEncString()
			if ok.Status&StatusSessionStateChange != 0 && r.Len() > 0 {
				ok.SessionState = r.LenEncString()
			}
		}
	} else {
		ok.Info = r.Rest()
	}
	return ok, r.OK()
}

// ParseEOF decodes a classic EOF packet: warnings and status.
func ParseEOF(p []byte) (warnings, status uint16, ok bool) {
	if len(p) < 5 || p[0] != HeaderEOF {
		return 0, 0, false
	}
	return uint16(p[1]) | uint16(p[2])<<8, uint16(p[3]) | uint16(p[4])<<8, true
}

// AppendOK appends the payload of an OK packet encoded for caps. header is
// HeaderOK, or HeaderEOF for a result-set terminator under DEPRECATE_EOF.
// Session state is included only when caps has CLIENT_SESSION_TRACK.
func AppendOK(b []byte, header byte, ok *OKPacket, caps uint32) []byte {
	status := ok.Status
	withState := caps&ClientSessionTrack != 0 && len(ok.SessionState) > 0
	if !withState {
		status &^= StatusSessionStateChange
	}
	b = append(b, header)
	b = AppendLenEncInt(b, ok.AffectedRows)
	b = AppendLenEncInt(b, ok.LastInsertID)
	b = AppendUint16(b, status)
	b = AppendUint16(b, ok.Warnings)
	if caps&ClientSessionTrack != 0 {
		if len(ok.Info) > 0 || withState {
			b = AppendLenEncString(b, ok.Info)
		}
		if withState {
			b = AppendLenEncString(b, ok.SessionState)
		}
	} else {
		b = append(b, ok.Info...)
	}
	return b
}

// AppendEOF appends a classic EOF payload.
func AppendEOF(b []byte, warnings, status uint16) []byte {
	status &^= StatusSessionStateChange
	return append(b, HeaderEOF, byte(warnings), byte(warnings>>8), byte(status), byte(status>>8))
}

// ParseErr decodes an ERR packet (protocol 4.1 form, with SQLSTATE).
func ParseErr(p []byte) *SQLError {
	r := NewReader(p)
	r.Byte()
	code := r.Uint16()
	e := &SQLError{Code: code, State: StateGeneral}
	if r.OK() && r.Len() > 0 && r.Rest()[0] == '#' {
		r.Byte()
		e.State = string(r.Bytes(5))
	}
	e.Message = string(r.Rest())
	if !r.OK() {
		return &SQLError{Code: ERMalformedPacket, State: StateGeneral, Message: "malformed error packet from server"}
	}
	return e
}

// AppendErr appends the payload of an ERR packet.
func AppendErr(b []byte, e *SQLError) []byte {
	state := e.State
	if len(state) != 5 {
		state = StateGeneral
	}
	b = append(b, HeaderErr, byte(e.Code), byte(e.Code>>8), '#')
	b = append(b, state...)
	return append(b, e.Message...)
}

// WriteErr queues an ERR packet.
func (c *Conn) WriteErr(e *SQLError) error {
	return c.EndPacket(AppendErr(c.BeginPacket(), e))
}

// WriteOK queues an OK packet.
func (c *Conn) WriteOK(ok *OKPacket, caps uint32) error {
	return c.EndPacket(AppendOK(c.BeginPacket(), HeaderOK, ok, caps))
}

// StateChange is one entry of a session-state-change block.
type StateChange struct {
	Type  byte
	Name  []byte // variable name (system variables), schema name, or flag
	Value []byte // variable value (system variables only)
}

// StateChanges iterates a session-state-change block, calling fn per entry.
// It returns false when the block is malformed.
func StateChanges(block []byte, fn func(StateChange)) bool {
	r := NewReader(block)
	for r.Len() > 0 {
		typ := r.Byte()
		data := r.LenEncString()
		if !r.OK() {
			return false
		}
		d := NewReader(data)
		ch := StateChange{Type: typ}
		switch typ {
		case TrackSystemVariables:
			ch.Name = d.LenEncString()
			ch.Value = d.LenEncString()
		case TrackSchema, TrackStateChange:
			ch.Name = d.LenEncString()
		default:
			ch.Name = data
		}
		if !d.OK() {
			return false
		}
		fn(ch)
	}
	return true
}
