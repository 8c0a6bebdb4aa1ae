package frontend

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/sharding"
)

// serverSyntaxError asks a server of cl whether sql, which the planner's
// parser could not read, is a syntax error, and returns the server's
// error if it is (1064 with its own message, as one server answers), or
// nil when the server reads it (syntax the parser does not know: the
// caller refuses it with 1235). The server parses it as PREPARE does,
// without running it, on a pooled connection of its own; the check costs
// two round trips (the session's state, the PREPARE) on this error path
// only.
func (s *Session) serverSyntaxError(cl *backend.Cluster, sql []byte) *mysql.SQLError {
	w := cl.Writer()
	if w == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), syntaxCheckTimeout)
	defer cancel()
	c, err := w.Pool.Acquire(ctx, false)
	if err != nil {
		return nil
	}
	// The session's sql_mode decides how the server reads it.
	if err := s.sync(c, 0); err != nil {
		if mysql.IsSQLError(err) {
			w.Pool.Release(c)
		} else {
			w.Pool.Discard(c, true)
		}
		return nil
	}
	b := append(s.scratch[:0], "PREPARE shardgate_syntax FROM _"...)
	b = append(b, s.clientCharset()...)
	b = append(b, " X'"...)
	b = hex.AppendEncode(b, sql)
	b = append(b, '\'')
	s.scratch = b
	err = c.Exec(string(b))
	switch {
	case err == nil:
		err = c.Exec("DEALLOCATE PREPARE shardgate_syntax")
	case mysql.IsSQLError(err):
		if se := asSQLError(err); se.Code == mysql.ERParse || se.Code == erSyntaxError {
			w.Pool.Release(c)
			return se
		}
		err = nil
	}
	if err != nil && !mysql.IsSQLError(err) {
		w.Pool.Discard(c, true)
		return nil
	}
	w.Pool.Release(c)
	return nil
}

// erSyntaxError is ER_SYNTAX_ERROR, the server's other syntax error.
const erSyntaxError = 1149

// syntaxCheckTimeout bounds the wait for a connection to check a
// statement's syntax on.
const syntaxCheckTimeout = 5 * time.Second

// clientCharset is the character set the client's statements are in, as
// an introducer names it.
func (s *Session) clientCharset() string {
	if v, ok := s.vars.Get("character_set_client"); ok && isCharsetName(v) {
		return v
	}
	return "utf8mb4"
}

func isCharsetName(v string) bool {
	if v == "" || len(v) > 32 {
		return false
	}
	for _, c := range v {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// noteCharset gives the planner's values the character set the session's
// string literals and string parameters are in (sharding.SessionCharset),
// from its character_set_client and character_set_connection: at login
// and whenever the server reports a variable change (SET NAMES …).
func (s *Session) noteCharset() {
	if s.work == nil {
		return // shardWork sets it when it takes one
	}
	client, _ := s.vars.Get("character_set_client")
	conn, _ := s.vars.Get("character_set_connection")
	s.work.SetCharset(sharding.SessionCharset(client, conn))
}
