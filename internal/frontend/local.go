package frontend

import (
	"github.com/shardgate/shardgate/internal/mysql"
)

// LocalHandler answers the statements of a server in local-answer mode
// (Options.Local): the proxy itself is the database, as on the admin SQL
// port, and no backend is ever touched. It is called from the session's
// goroutine, by many sessions at once.
type LocalHandler interface {
	// Answer answers one COM_QUERY: a result set (Columns set), an OK
	// (Columns nil) or, when err is not nil, that error.
	Answer(c LocalClient, sql string) (*LocalResult, *mysql.SQLError)
}

// LocalClient is who sent a statement to a LocalHandler.
type LocalClient struct {
	ConnID uint32
	User   string
	Addr   string // the client's address
	DB     string // what COM_INIT_DB or the handshake named; no meaning to the server
}

// LocalResult is a LocalHandler's answer.
type LocalResult struct {
	// Columns of a result set; nil makes the answer an OK.
	Columns []LocalColumn
	Rows    [][]*string // nil: NULL
	// AffectedRows and Info are an OK's.
	AffectedRows uint64
	Info         string
}

// LocalColumn is a column of a local result set.
type LocalColumn struct {
	Name string
	Type LocalType
}

// LocalType is the type of a local result's column: clients align
// numbers to the right, and drivers such as go-sql-driver parse integers.
type LocalType uint8

// The types of local result columns.
const (
	LocalText    LocalType = iota // VARCHAR
	LocalInteger                  // BIGINT
	LocalDecimal                  // DECIMAL with three decimals (milliseconds, seconds, rates)
)

// dispatchLocal runs one command of a session of a local-answer server:
// statements go to the handler, COM_PING, COM_QUIT and COM_INIT_DB are
// answered here, anything else is an unknown command. false ends the
// session.
func (s *Session) dispatchLocal(p []byte) bool {
	if s.stream != nil {
		if p = s.readWhole(p); p == nil {
			return false
		}
	}
	switch p[0] {
	case mysql.ComQuery:
		return s.answerLocal(string(p[1:]))
	case mysql.ComQuit:
		return false
	case mysql.ComPing:
		return s.writeOK(&mysql.OKPacket{Status: s.status()})
	case mysql.ComInitDB:
		s.db = string(p[1:])
		return s.writeOK(&mysql.OKPacket{Status: s.status()})
	}
	return s.unknownCommand(p[0])
}

// answerLocal has the handler answer a statement.
func (s *Session) answerLocal(sql string) bool {
	c := LocalClient{ConnID: s.id, User: s.user.Name, Addr: s.remote, DB: s.db}
	res, e := s.srv.opt.Local.Answer(c, sql)
	switch {
	case e != nil:
		return s.writeErr(e)
	case res.Columns == nil:
		return s.writeOK(&mysql.OKPacket{AffectedRows: res.AffectedRows, Status: s.status(), Info: []byte(res.Info)})
	}
	cols := make([]mysql.Column, len(res.Columns))
	for i, c := range res.Columns {
		cols[i] = localColumn(c)
	}
	if err := s.client.WriteTextResultNullable(cols, res.Rows, s.caps, s.status()); err != nil {
		return false
	}
	return s.client.Flush() == nil
}

// localColumn describes a local result's column as the server describes
// a computed column of its type.
func localColumn(c LocalColumn) mysql.Column {
	switch c.Type {
	case LocalInteger:
		return mysql.Column{Name: c.Name, Type: mysql.TypeLongLong, Charset: uint16(mysql.CollationBinary), Length: 21,
			Flags: mysql.FlagBinary}
	case LocalDecimal:
		return mysql.Column{Name: c.Name, Type: mysql.TypeNewDecimal, Charset: uint16(mysql.CollationBinary), Length: 24,
			Flags: mysql.FlagBinary, Decimals: 3}
	}
	return mysql.Column{Name: c.Name, Type: mysql.TypeVarString, Charset: uint16(mysql.CollationUTF8MB4GeneralCI), Length: 4096}
}
