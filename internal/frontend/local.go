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
	Rows    [][]string
	// AffectedRows and Info are an OK's.
	AffectedRows uint64
	Info         string
}

// LocalColumn is a column of a local result set: text, or a number
// (which clients such as the mariadb CLI align to the right).
type LocalColumn struct {
	Name    string
	Numeric bool
}

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
	return s.writeResult(cols, res.Rows)
}

// localColumn describes a local result's column as the server describes
// a computed VARCHAR or DOUBLE column.
func localColumn(c LocalColumn) mysql.Column {
	if c.Numeric {
		return mysql.Column{Name: c.Name, Type: mysql.TypeDouble, Charset: uint16(mysql.CollationBinary), Length: 22,
			Flags: mysql.FlagBinary, Decimals: 31}
	}
	return mysql.Column{Name: c.Name, Type: mysql.TypeVarString, Charset: uint16(mysql.CollationUTF8MB4GeneralCI), Length: 4096}
}

// writeResult answers with a result set the proxy made: text rows. It
// leaves FOUND_ROWS() alone, as the server does after SHOW WARNINGS.
func (s *Session) writeResult(cols []mysql.Column, rows [][]string) bool {
	if s.stream != nil && !s.dropStream() {
		return false
	}
	s.lastRowCount = -1 // a result set
	if err := s.client.WriteTextResult(cols, rows, s.caps, s.status()); err != nil {
		return false
	}
	return s.client.Flush() == nil
}
