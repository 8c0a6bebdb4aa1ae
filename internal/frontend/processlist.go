package frontend

import (
	"bytes"
	"iter"
	"net"
	"strings"

	"github.com/shardgate/shardgate/internal/engine"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/planner"
	"github.com/shardgate/shardgate/internal/router"
)

// The list of sessions (SHOW [FULL] PROCESSLIST, information_schema
// .PROCESSLIST) is answered by the proxy: the backend's threads serve
// every session in turn and their ids are not the connection ids clients
// know (CONNECTION_ID(), the handshake), so a client that looks itself
// up there to KILL itself from another connection would find nothing,
// or another session's thread. The proxy lists its own sessions instead;
// the server still gives the column definitions (engine.Processlist).
//
// Privilege: a user sees its own sessions, or every client session of
// the proxy with users[].process (MySQL's PROCESS privilege), which the
// configuration grants, not the backend: every user of a cluster shares
// its backend account, whose grants cannot tell them apart.

// namesProcesslist reports whether st names the list of sessions: SHOW
// [FULL] PROCESSLIST, information_schema.PROCESSLIST, or PROCESSLIST
// alone while information_schema is the current database.
func (s *Session) namesProcesslist(st router.Stmt) bool {
	return st.Processlist&^router.ProcesslistName != 0 ||
		st.Processlist != 0 && strings.EqualFold(s.db, "information_schema")
}

// processlist answers a statement that names the list of sessions. It
// reports handled false for one that only describes the table
// (DESCRIBE, SHOW COLUMNS...), which runs as usual.
func (s *Session) processlist(st router.Stmt, p []byte) (handled, ok bool) {
	plan, err := planner.Processlist(st, p[1:], s.db, s.id)
	if err != nil {
		return true, s.writeErr(asSQLError(err))
	}
	if plan == nil {
		return false, false
	}
	// The column definitions come from where the session is: any
	// server gives the same, and a transaction stays on its connection.
	plan.Cluster = s.cl
	plan.Sessions = s.processes
	s.cmd = command{st: st, n: needDB}
	return true, plan.Execute(s, p)
}

// refusePreparedProcesslist refuses to prepare sql, classified st, when it
// reads the list of sessions: the proxy answers only the statements
// themselves, not their prepared forms (COM_STMT_PREPARE, and text
// PREPARE … FROM '…' or EXECUTE IMMEDIATE '…', which would run on the
// backend and list its threads).
func (s *Session) refusePreparedProcesslist(st router.Stmt, sql []byte) *mysql.SQLError {
	if st.Processlist == 0 || !s.namesProcesslist(st) {
		return nil
	}
	if plan, err := planner.Processlist(st, sql, s.db, s.id); err == nil && plan == nil {
		return nil // describes the table
	}
	return mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "This version of shardgate doesn't yet support '%s'",
		"prepared statements reading the list of sessions (SHOW PROCESSLIST, information_schema.PROCESSLIST); send the query as text")
}

// refuseTextPrepare is refusePreparedProcesslist for the statement a text
// PREPARE or EXECUTE IMMEDIATE names as a literal (router.PreparedText).
// One named by a user variable (FROM @v) is not seen.
func (s *Session) refuseTextPrepare(sql []byte) *mysql.SQLError {
	text, ok := router.PreparedText(sql)
	if !ok {
		return nil
	}
	return s.refusePreparedProcesslist(router.Classify(text), text)
}

// processes lists the sessions the session's user may see: its own, or
// with PROCESS every client session of the proxy that has logged in.
func (s *Session) processes() []engine.Process {
	all := s.user.Process
	var out []engine.Process
	for peer := range s.srv.peers() {
		p, ok := peer.process(s)
		if ok && (all || p.User == s.user.Name) {
			out = append(out, p)
		}
	}
	return out
}

// peers yields the logged-in sessions of every client listener of the
// proxy (Options.Peers), or this server's.
func (s *Server) peers() iter.Seq[*Session] {
	if s.opt.Peers != nil {
		return s.opt.Peers()
	}
	return s.Sessions()
}

// process is the session as asker's list of sessions shows it, from what
// it published under its lock (activity.go); false when it has not
// logged in.
func (s *Session) process(asker *Session) (engine.Process, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.user == nil {
		return engine.Process{}, false
	}
	a := &s.act
	p := engine.Process{ID: s.id, User: a.user, Host: clientHost(s.remote), DB: a.db, Since: a.since, Command: "Sleep"}
	switch {
	case s == asker:
		// Its statement is the one asking, running now; read in the
		// session's own goroutine.
		p.Self, p.Command, p.Since = true, "Query", s.tele.start
		p.Info = bytes.Clone(s.tele.sql)
	case s.killed.Load():
		p.Command = "Killed"
	case a.running:
		p.Command, p.State = commandName(a.cmd), stateRunning
		p.Info = bytes.Clone(a.text())
	}
	return p, true
}

// stateRunning is a running statement's state: the proxy does not follow
// the server's stages, only that the statement runs.
const stateRunning = "Executing"

// clientHost is a client's address as the server's list shows it:
// address:port, without the brackets of an IPv6 address.
func clientHost(remote string) string {
	h, port, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	return h + ":" + port
}

// commandName is the server's name of a command (Command in the list of
// sessions).
func commandName(cmd byte) string {
	switch cmd {
	case mysql.ComStmtExecute:
		return "Execute"
	case mysql.ComStmtPrepare:
		return "Prepare"
	case mysql.ComStmtFetch:
		return "Fetch"
	case mysql.ComFieldList:
		return "Field List"
	case mysql.ComInitDB:
		return "Init DB"
	case mysql.ComStatistics:
		return "Statistics"
	case mysql.ComChangeUser:
		return "Change user"
	}
	return "Query"
}
