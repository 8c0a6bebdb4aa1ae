// Package router decides where client statements go. This file holds the
// statement classifier that runs on the hot path of every COM_QUERY.
package router

import "strconv"

// Kind is the class of a statement, given by its first meaningful keyword.
type Kind uint8

const (
	KindOther      Kind = iota // anything not listed below
	KindSelect                 // SELECT, (SELECT ...), WITH ... SELECT
	KindInsert                 // INSERT
	KindUpdate                 // UPDATE, WITH ... UPDATE
	KindDelete                 // DELETE, WITH ... DELETE
	KindReplace                // REPLACE
	KindSet                    // SET (variables, NAMES, TRANSACTION, PASSWORD, ROLE...)
	KindUse                    // USE db
	KindBegin                  // BEGIN [WORK], START TRANSACTION
	KindCommit                 // COMMIT
	KindRollback               // ROLLBACK (but not ROLLBACK TO SAVEPOINT)
	KindSavepoint              // SAVEPOINT, ROLLBACK [WORK] TO [SAVEPOINT], RELEASE SAVEPOINT
	KindShow                   // SHOW
	KindLock                   // LOCK TABLES/TABLE (also LOCK INSTANCE FOR BACKUP, MariaDB BACKUP LOCK)
	KindUnlock                 // UNLOCK TABLES (also UNLOCK INSTANCE, MariaDB BACKUP UNLOCK)
	KindPrepare                // PREPARE
	KindExecute                // EXECUTE
	KindDeallocate             // DEALLOCATE PREPARE, DROP PREPARE
	KindLoadData               // LOAD DATA, LOAD XML
	KindKill                   // KILL
	KindCreate                 // CREATE
	KindAlter                  // ALTER
	KindDrop                   // DROP (but not DROP PREPARE)
	KindTruncate               // TRUNCATE
	KindCall                   // CALL
	KindDo                     // DO
	KindHandler                // HANDLER
	KindXA                     // XA
	KindFlush                  // FLUSH
	KindAnalyze                // ANALYZE, EXPLAIN, DESCRIBE, DESC
	KindWith                   // WITH ... whose main statement was not found
	KindValues                 // VALUES ROW(...)
	KindTable                  // TABLE t
	KindGrant                  // GRANT
	KindRevoke                 // REVOKE
	KindRename                 // RENAME
	KindOptimize               // OPTIMIZE
	KindCheck                  // CHECK
	KindRepair                 // REPAIR
	KindReset                  // RESET
	KindPurge                  // PURGE
	KindChange                 // CHANGE MASTER/REPLICATION SOURCE/REPLICATION FILTER
	KindStart                  // START SLAVE/REPLICA/GROUP_REPLICATION... (not START TRANSACTION)
	KindStop                   // STOP

	kindCount
)

var kindNames = [kindCount]string{
	KindOther: "Other", KindSelect: "Select", KindInsert: "Insert", KindUpdate: "Update",
	KindDelete: "Delete", KindReplace: "Replace", KindSet: "Set", KindUse: "Use",
	KindBegin: "Begin", KindCommit: "Commit", KindRollback: "Rollback",
	KindSavepoint: "Savepoint", KindShow: "Show", KindLock: "Lock", KindUnlock: "Unlock",
	KindPrepare: "Prepare", KindExecute: "Execute", KindDeallocate: "Deallocate",
	KindLoadData: "LoadData", KindKill: "Kill", KindCreate: "Create", KindAlter: "Alter",
	KindDrop: "Drop", KindTruncate: "Truncate", KindCall: "Call", KindDo: "Do",
	KindHandler: "Handler", KindXA: "XA", KindFlush: "Flush", KindAnalyze: "Analyze",
	KindWith: "With", KindValues: "Values", KindTable: "Table", KindGrant: "Grant",
	KindRevoke: "Revoke", KindRename: "Rename", KindOptimize: "Optimize", KindCheck: "Check",
	KindRepair: "Repair", KindReset: "Reset", KindPurge: "Purge", KindChange: "Change",
	KindStart: "Start", KindStop: "Stop",
}

// String returns the kind's name ("Select", "LoadData"...).
func (k Kind) String() string {
	if k < kindCount {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Flags are facts found anywhere in the statement text, outside strings and
// comments (but inside executable comments), in any of its statements when
// the text holds several.
type Flags uint32

const (
	// FlagUserVar: a user variable reference @name, @`name`, @'name' or
	// @"name". Not @@system variables, and not the host part of an account
	// name 'user'@'host', `user`@`host` or user@host (a quoted string,
	// quoted identifier or name immediately followed by '@') in the
	// statements that take account names: GRANT, REVOKE, CREATE, ALTER,
	// DROP, RENAME, SET (PASSWORD FOR, DEFAULT ROLE) and SHOW (GRANTS FOR).
	FlagUserVar Flags = 1 << iota
	// FlagSysVarSet: SET of a system variable: SET x=, SET @@x=,
	// SET SESSION/LOCAL/GLOBAL/PERSIST/PERSIST_ONLY x, SET NAMES,
	// SET CHARACTER SET/CHARSET, SET [scope] TRANSACTION. Also, as they
	// change session state too, SET ROLE and SET RESOURCE GROUP. Inside a
	// stored program SET x= may assign a local variable; it is flagged all
	// the same (only in a top-level SET statement).
	FlagSysVarSet
	// FlagGetLock: GET_LOCK(, RELEASE_LOCK( or RELEASE_ALL_LOCKS(: the
	// session holds (or held) named locks and must stay on its connection.
	FlagGetLock
	// FlagTempTable: CREATE [OR REPLACE] TEMPORARY TABLE, DROP TEMPORARY
	// TABLE (and MariaDB's TEMPORARY SEQUENCE).
	FlagTempTable
	// FlagCalcFoundRows: SQL_CALC_FOUND_ROWS.
	FlagCalcFoundRows
	// FlagFoundRows: FOUND_ROWS(.
	FlagFoundRows
	// FlagRowCount: ROW_COUNT(.
	FlagRowCount
	// FlagLastInsertID: LAST_INSERT_ID(.
	FlagLastInsertID
	// FlagLastInsertIDArg: LAST_INSERT_ID(expr), which sets the value.
	FlagLastInsertIDArg
	// FlagWarnings: SHOW WARNINGS, SHOW ERRORS, SHOW COUNT(*) WARNINGS|ERRORS,
	// @@warning_count, @@error_count, GET [CURRENT|STACKED] DIAGNOSTICS.
	FlagWarnings
	// FlagLocal: LOAD DATA LOCAL, LOAD XML LOCAL.
	FlagLocal
	// FlagForUpdate: FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE.
	FlagForUpdate
	// FlagMultiStatement: a ';' followed by another non-empty statement
	// (a trailing ';', whitespace or comments do not count; the ';' inside
	// the BEGIN ... END body of CREATE PROCEDURE/FUNCTION/TRIGGER/EVENT do
	// not either).
	FlagMultiStatement
	// FlagConnectionID: CONNECTION_ID(.
	FlagConnectionID
	// FlagSideEffectFunc: a function that has side effects or must run on
	// the primary: SLEEP, GET_LOCK, RELEASE_LOCK, RELEASE_ALL_LOCKS,
	// IS_USED_LOCK, IS_FREE_LOCK, NEXTVAL, SETVAL, LASTVAL,
	// NEXT/PREVIOUS VALUE FOR, MASTER_POS_WAIT, SOURCE_POS_WAIT,
	// MASTER_GTID_WAIT, WAIT_FOR_EXECUTED_GTID_SET,
	// WAIT_UNTIL_SQL_THREAD_AFTER_GTIDS, UUID_SHORT.
	FlagSideEffectFunc
	// FlagSelectInto: SELECT ... INTO (@var, OUTFILE, DUMPFILE, or a local
	// variable); also TABLE/VALUES ... INTO.
	FlagSelectInto
	// FlagTrxIsolationSet: SET TRANSACTION ... without a scope (the
	// characteristics of the next transaction only, which the server does
	// not report as a session variable change).
	FlagTrxIsolationSet
	// FlagAutocommit: SET autocommit, SET @@autocommit,
	// SET @@session.autocommit, SET SESSION|LOCAL autocommit (not GLOBAL or
	// PERSIST, which leave the session's value alone).
	FlagAutocommit
	// FlagAnalyzeExec: a KindAnalyze statement that does more than describe
	// a statement: ANALYZE TABLE (updates statistics, is binlogged),
	// MariaDB's ANALYZE <statement> and MySQL's EXPLAIN ANALYZE (both run
	// the statement), EXPLAIN FOR CONNECTION (depends on one server's
	// connection). Plain EXPLAIN/DESCRIBE/DESC leave it unset.
	FlagAnalyzeExec
	// FlagHintPrimary, FlagHintReplica: a routing hint in a comment,
	// /* shardgate:primary */ or /* shardgate:replica */ ("/*+" works
	// too, and the words are case-insensitive), anywhere in the text.
	FlagHintPrimary
	FlagHintReplica
	// FlagHintShard: /* shardgate:shard=NAME */ sends a statement on a
	// sharded schema to the named shard as written (ShardHint reads the
	// name); elsewhere it is ignored.
	FlagHintShard
	// FlagHintExplain: /* shardgate:explain */ on a sharded schema answers
	// with the statement's plan and per-shard SQL instead of running it.
	FlagHintExplain
	// FlagSetNotVariable: a SET statement that does not assign variables:
	// SET PASSWORD, SET DEFAULT ROLE (which write the grant tables) and
	// MariaDB's SET STATEMENT ... FOR <statement>.
	FlagSetNotVariable
	// FlagClientTimeout: @@wait_timeout or @@interactive_timeout of the
	// session (@@x, @@session.x, @@local.x; not @@global.x). The proxy
	// enforces them per client, so the backend connection's value is not
	// the session's: the session answers them (Substitutions).
	FlagClientTimeout

	flagsEnd // one past the last flag
)

var flagNames = [...]string{
	"UserVar", "SysVarSet", "GetLock", "TempTable", "CalcFoundRows", "FoundRows",
	"RowCount", "LastInsertID", "LastInsertIDArg", "Warnings", "Local", "ForUpdate",
	"MultiStatement", "ConnectionID", "SideEffectFunc", "SelectInto", "TrxIsolationSet",
	"Autocommit", "AnalyzeExec", "HintPrimary", "HintReplica", "HintShard", "HintExplain", "SetNotVariable",
	"ClientTimeout",
}

// Has reports whether all the flags in x are set in f.
func (f Flags) Has(x Flags) bool { return f&x == x }

// String returns the set flags' names joined by '|' ("0" if none). It
// allocates; it is meant for logs and tests.
func (f Flags) String() string {
	if f == 0 {
		return "0"
	}
	var b []byte
	for i, name := range flagNames {
		if f&(1<<i) != 0 {
			if len(b) > 0 {
				b = append(b, '|')
			}
			b = append(b, name...)
		}
	}
	if rest := f &^ (flagsEnd - 1); rest != 0 {
		if len(b) > 0 {
			b = append(b, '|')
		}
		b = append(b, "0x"...)
		b = strconv.AppendUint(b, uint64(rest), 16)
	}
	return string(b)
}

// Stmt is the classification of a statement text.
type Stmt struct {
	Kind  Kind  // kind of the first non-empty statement
	Flags Flags // facts found anywhere in the text

	// KILL [HARD|SOFT] [CONNECTION | QUERY [ID]] <n>: KillQuery is set for
	// KILL QUERY; KillHasID is set, with KillID, when the target is a single
	// unsigned integer literal connection id (not KILL USER u, not KILL @v,
	// not KILL 1+2).
	//
	// MariaDB's KILL QUERY ID n names a query id
	// (information_schema.PROCESSLIST.QUERY_ID), not a connection id: it sets
	// KillQuery, KillByQueryID and KillID = n but leaves KillHasID false, so
	// that code mapping connection ids does not kill an unrelated session.
	KillQuery     bool
	KillID        uint64
	KillHasID     bool
	KillByQueryID bool

	// Processlist says how the text names the list of sessions, in any
	// of its statements (0 for nearly every statement): the proxy answers
	// those reads itself, with its own sessions, whose ids are the
	// connection ids its clients know, not the backend's threads.
	Processlist Processlist

	// Schemas is a filter of the database names the text may name: the
	// names that qualify another name (db.t, `db`.t) and every name of a
	// SHOW statement (SHOW TABLES FROM db), two bits each (see
	// SchemaBits). A name's bits not all set: the text does not name it.
	Schemas uint64

	// NoTable: the statement reads no table, so that MariaDB leaves the
	// diagnostics of the statement before it (SHOW WARNINGS,
	// @@warning_count, GET DIAGNOSTICS) as they were unless it raises a
	// condition of its own, where a statement that reads a table clears
	// them (the server clears them when the statement's table list is not
	// empty). Set, conservatively, for a SELECT, DO, SET or VALUES without
	// FROM (but FROM DUAL), WITH or a sequence function (NEXTVAL, NEXT
	// VALUE FOR… open the sequence's table), and for BEGIN, COMMIT,
	// ROLLBACK, the savepoint statements and USE; never for a
	// multi-statement, SET PASSWORD, SET DEFAULT ROLE or SET STATEMENT. A
	// stored function a statement calls does not count (the server
	// decides on the statement's own tables).
	NoTable bool

	// Digest is the hash of the statement's normalized shape (literals
	// replaced, whitespace, comments and keyword case left out; see
	// digest.go): statements that differ only in those share it.
	// DigestText renders the shape.
	Digest uint64
}

// Processlist is a set of the ways a statement text names the list of
// sessions (Stmt.Processlist).
type Processlist uint8

const (
	// ProcesslistShow: SHOW PROCESSLIST; ProcesslistShowFull: SHOW FULL
	// PROCESSLIST.
	ProcesslistShow Processlist = 1 << iota
	ProcesslistShowFull
	// ProcesslistTable: information_schema.PROCESSLIST, in any case, with
	// either name quoted or not.
	ProcesslistTable
	// ProcesslistName: the name PROCESSLIST (quoted or not) not after a
	// '.': information_schema's table when that is the current database,
	// else whatever has that name (a table, a column, an alias).
	ProcesslistName
)

// notReadOnlyFlags are the flags that make IsReadOnly false.
const notReadOnlyFlags = (flagsEnd - 1) &^ hintFlags // every flag but the hints disqualifies

// hintFlags are the routing hints.
const hintFlags = FlagHintPrimary | FlagHintReplica | FlagHintShard | FlagHintExplain

// IsReadOnly reports whether s can run on any backend connection, including
// one to a replica: a SELECT (also WITH ... SELECT and (SELECT ...)), SHOW,
// EXPLAIN/DESCRIBE, VALUES or TABLE statement with no flag at all. Any flag
// disqualifies it; in particular:
//   - FlagForUpdate, FlagSelectInto, FlagSideEffectFunc (locks, writes,
//     waits, sequences), FlagAnalyzeExec (ANALYZE TABLE, EXPLAIN ANALYZE);
//   - FlagUserVar (reads or assigns session state), FlagCalcFoundRows,
//     FlagFoundRows, FlagRowCount, FlagLastInsertID, FlagConnectionID and
//     FlagWarnings (the answer depends on the session's previous statements
//     or its connection), FlagGetLock;
//   - FlagMultiStatement (only the first statement's kind is known).
//
// It is conservative: false does not mean the statement writes. Reads of
// system variables (@@version, ...) do not disqualify, nor do SHOW
// statements about server state (SHOW MASTER STATUS, SHOW PROCESSLIST...);
// reads of a temporary table need the session pinned, which is the caller's
// business (see FlagTempTable).
func IsReadOnly(s Stmt) bool {
	return isReadKind(s.Kind) && s.Flags&notReadOnlyFlags == 0
}

// mayWriteFlags are the flags that make even a read or a SET a possible
// write: several statements, functions with side effects (sequences,
// locks), SELECT ... INTO OUTFILE, ANALYZE TABLE and statements that
// ANALYZE runs, temporary tables, LOAD DATA LOCAL, locking reads.
const mayWriteFlags = FlagMultiStatement | FlagSideEffectFunc | FlagSelectInto | FlagAnalyzeExec |
	FlagTempTable | FlagGetLock | FlagLocal | FlagForUpdate

// IsWrite reports whether s may change data that later reads could see,
// for read-your-writes. Statements of a reading kind are not writes even
// when they read or set session state (user variables, FOUND_ROWS(),
// LAST_INSERT_ID(expr), SHOW WARNINGS: IsReadOnly is false for them), nor
// are SETs of variables (SET NAMES, SET autocommit, SET SESSION sql_mode,
// SET @v = (SELECT ...)), which drivers send on connect. SET PASSWORD,
// SET DEFAULT ROLE and SET STATEMENT ... FOR are. Anything with a flag of
// mayWriteFlags is, as is every other kind. The caller accounts for a
// transaction that a statement commits implicitly (SET autocommit = 1).
func IsWrite(s Stmt) bool {
	switch {
	case s.Flags&mayWriteFlags != 0:
		return true
	case isReadKind(s.Kind):
		return false
	case s.Kind == KindSet:
		return s.Flags&FlagSetNotVariable != 0
	}
	return true
}

// Classify classifies the SQL text of a COM_QUERY. It does not parse SQL: it
// lexes the text (skipping whitespace, comments, strings and quoted
// identifiers, but lexing the inside of executable comments /*! */, /*!NNNNN */
// and /*M! */ as code) and looks at keywords. It never allocates and never
// panics, whatever the input.
//
// Strings are lexed with backslash escapes, as in the default SQL mode (not
// NO_BACKSLASH_ESCAPES); "..." is a string (not ANSI_QUOTES).
//
// It also computes the statement's digest (Stmt.Digest, see digest.go) in
// the same pass.
func Classify(sql []byte) Stmt {
	var c classifier
	c.run(sql)
	return c.st
}

func (c *classifier) run(sql []byte) {
	c.lx.s = sql
	c.s.withBody = -1
	c.dig.init()
	for {
		t := &c.ring[c.pos&ringMask]
		c.lx.next(t)
		if t.kind == tEOF {
			break
		}
		kept := c.feed(t)
		c.digest(t)
		if kept {
			c.pos++
			c.s.ntok++
		}
	}
	c.endStmt()
	c.st.Flags |= c.lx.hints
	if c.st.Flags&(FlagMultiStatement|FlagSetNotVariable) != 0 {
		c.st.NoTable = false // the last statement's tables decide; SET PASSWORD writes some
	}
	c.st.Digest = c.dig.finish()
}

const ringMask = 3 // c.ring holds the current token and the ones before it

type classifier struct {
	lx        lexer
	dig       digester
	st        Stmt
	haveFirst bool // the first non-empty statement has started
	semi      bool // a statement-ending ';' has been seen
	s         stmtState

	// ring holds the current token, at pos, and the previous ones. Tokens are
	// lexed in place and never copied.
	ring [ringMask + 1]token
	pos  uint
}

// stmtState is the state of the statement being lexed, reset at each ';'.
type stmtState struct {
	started  bool // a token other than ';' has been seen
	first    bool // this is the first non-empty statement
	kindDone bool // the first keyword has been seen
	kind     Kind
	depth    int  // parenthesis depth
	ntok     uint // number of tokens of the statement already processed

	pendLIArg bool // just after LAST_INSERT_ID(
	pendFrom  bool // just after FROM
	tables    bool // names a table (Stmt.NoTable): FROM but FROM DUAL, WITH, a sequence

	// SET statements
	setActive bool  // parsing a SET assignment list
	setExpect bool  // the next token starts an assignment
	setFirst  bool  // ... the first one
	setScope  uint8 // scope given for the current assignment

	// WITH: looking for the main statement after the CTEs
	withResolving bool
	withBody      int // depth outside the CTE body being skipped, or -1

	// bodies of stored programs (CREATE PROCEDURE ... BEGIN ...; ...; END)
	routine bool // CREATE/ALTER PROCEDURE/FUNCTION/TRIGGER/EVENT/PACKAGE
	block   int  // BEGIN/CASE ... END nesting at depth 0
	pendEnd bool // just after END

	infile bool // LOAD ...: INFILE seen
}

func (c *classifier) endStmt() {
	if c.s.first {
		c.st.Kind = c.s.kind
		c.st.NoTable = noTableKind(c.s.kind) && !c.s.tables
	}
	c.s = stmtState{withBody: -1}
}

// noTableKind reports the kinds of statement that read no table unless
// they name one (Stmt.NoTable).
func noTableKind(k Kind) bool {
	switch k {
	case KindSelect, KindDo, KindSet, KindValues, KindBegin, KindCommit, KindRollback, KindSavepoint, KindUse:
		return true
	}
	return false
}

// back returns the n-th token (n >= 1) before the current one in the
// statement, or nil.
func (c *classifier) back(n uint) *token {
	if c.s.ntok < n {
		return nil
	}
	return &c.ring[(c.pos-n)&ringMask]
}

func (c *classifier) prevWord(k kw) bool {
	p := c.back(1)
	return p != nil && p.kind == tWord && p.kw == k
}

func (c *classifier) prev2Word(k kw) bool {
	p := c.back(2)
	return p != nil && p.kind == tWord && p.kw == k
}

// feed processes one token, the current one in c.ring. It reports whether
// the token stays in the statement's history (the ';' ending a statement
// does not).
func (c *classifier) feed(t *token) bool {
	s := &c.s
	if t.kind == tWord {
		t.kw = lookupKw(c.lx.s[t.ns:t.ne], t.h)
	}
	if !s.started {
		if t.isPunct(';') {
			c.semi = true
			return false
		}
		s.started = true
		if c.semi {
			c.st.Flags |= FlagMultiStatement
		}
		if !c.haveFirst {
			c.haveFirst = true
			s.first = true
		}
	}
	if s.pendEnd {
		s.pendEnd = false
		if t.kind == tWord && (t.kw == kwIF || t.kw == kwLOOP || t.kw == kwWHILE || t.kw == kwREPEAT) {
			// END IF/LOOP/WHILE/REPEAT: closes a block that was not counted
		} else if s.block > 0 {
			s.block--
		}
	}
	if s.pendLIArg {
		s.pendLIArg = false
		if !t.isPunct(')') {
			c.st.Flags |= FlagLastInsertIDArg
		}
	}
	if s.pendFrom {
		s.pendFrom = false
		if t.kind != tWord || t.kw != kwDUAL {
			s.tables = true
		}
	}
	if !s.kindDone {
		if t.isPunct('(') { // (SELECT ...)
			s.depth++
			return true
		}
		s.kindDone = true
		if t.kind == tWord {
			s.kind = c.firstKeyword(t.kw)
			return true
		}
	}
	target := s.setExpect // t is what a SET assigns, not a value read
	if target {
		c.setTarget(t)
	}

	switch t.kind {
	case tPunct:
		switch t.c {
		case ';':
			if s.routine && s.block > 0 {
				break // inside a stored program's body
			}
			c.endStmt()
			c.semi = true
			return false
		case '(':
			if p := c.back(1); p != nil && (p.kind == tWord || p.kind == tQuoted) {
				c.call(p)
			}
			if s.withResolving && s.withBody < 0 && c.prevWord(kwAS) {
				s.withBody = s.depth // WITH name AS ( ... )
			}
			s.depth++
		case ')':
			if s.depth > 0 {
				s.depth--
			}
			if s.withBody >= 0 && s.depth <= s.withBody {
				s.withBody = -1
			}
		case ',':
			if s.setActive && s.depth == 0 {
				s.setExpect = true
				s.setScope = scopeNone
			}
		case '.':
			if p := c.back(1); p != nil {
				c.noteSchema(p)
			}
		}
	case tWord:
		if s.kind == KindShow {
			c.noteSchema(t)
		}
		if t.kw != kwNone {
			c.word(t)
		}
	case tQuoted:
		if s.kind == KindShow {
			c.noteSchema(t)
		}
		// `PROCESSLIST`: the length test keeps the look-up off the
		// quoted names of ordinary statements.
		if t.ne-t.ns == len("PROCESSLIST") && lookupKw(c.lx.s[t.ns:t.ne], t.h) == kwPROCESSLIST {
			c.processlist()
		}
	case tUserVar:
		if !c.userAtHost(t) {
			c.st.Flags |= FlagUserVar
		}
	case tSysVar:
		switch lookupKw(c.lx.s[t.ns:t.ne], t.h) {
		case kwWARNING_COUNT, kwERROR_COUNT:
			c.st.Flags |= FlagWarnings
		case kwWAIT_TIMEOUT, kwINTERACTIVE_TIMEOUT:
			if t.scope != scopeGlobal && !target {
				c.st.Flags |= FlagClientTimeout
			}
		}
	}
	return true
}

// nextWord returns the keyword of the next token of la (kwNone if it is not
// a keyword) and the token.
func (c *classifier) nextWord(la *lexer, t *token) kw {
	la.next(t)
	if t.kind != tWord {
		return kwNone
	}
	return lookupKw(la.s[t.ns:t.ne], t.h)
}

// firstKeyword returns the kind of the statement whose first keyword is k,
// peeking at the following words if needed, and sets up the statement state.
func (c *classifier) firstKeyword(k kw) Kind {
	s := &c.s
	la := c.lx // look-ahead copy
	var t token
	switch k {
	case kwSELECT:
		return KindSelect
	case kwINSERT:
		return KindInsert
	case kwUPDATE:
		return KindUpdate
	case kwDELETE:
		return KindDelete
	case kwREPLACE:
		return KindReplace
	case kwSET:
		s.setActive, s.setExpect, s.setFirst = true, true, true
		return KindSet
	case kwUSE:
		return KindUse
	case kwBEGIN:
		if k2 := c.nextWord(&la, &t); k2 == kwNOT { // MariaDB BEGIN NOT ATOMIC ... END
			s.routine = true
			s.block = 1
			return KindOther
		}
		return KindBegin
	case kwSTART:
		if k2 := c.nextWord(&la, &t); k2 == kwTRANSACTION {
			return KindBegin
		}
		return KindStart
	case kwCOMMIT:
		return KindCommit
	case kwROLLBACK:
		k2 := c.nextWord(&la, &t)
		if k2 == kwWORK {
			k2 = c.nextWord(&la, &t)
		}
		if k2 == kwTO {
			return KindSavepoint
		}
		return KindRollback
	case kwSAVEPOINT:
		return KindSavepoint
	case kwRELEASE:
		if k2 := c.nextWord(&la, &t); k2 == kwSAVEPOINT {
			return KindSavepoint
		}
		return KindOther
	case kwSHOW:
		return KindShow
	case kwLOCK:
		return KindLock
	case kwUNLOCK:
		return KindUnlock
	case kwPREPARE:
		return KindPrepare
	case kwEXECUTE:
		return KindExecute
	case kwDEALLOCATE:
		return KindDeallocate
	case kwDROP:
		if k2 := c.nextWord(&la, &t); k2 == kwPREPARE {
			return KindDeallocate
		}
		return KindDrop
	case kwLOAD:
		if k2 := c.nextWord(&la, &t); k2 == kwDATA || k2 == kwXML {
			return KindLoadData
		}
		return KindOther
	case kwKILL:
		c.kill(&la)
		return KindKill
	case kwCREATE:
		return KindCreate
	case kwALTER:
		return KindAlter
	case kwTRUNCATE:
		return KindTruncate
	case kwCALL:
		return KindCall
	case kwDO:
		return KindDo
	case kwHANDLER:
		return KindHandler
	case kwXA:
		return KindXA
	case kwFLUSH:
		return KindFlush
	case kwANALYZE:
		c.st.Flags |= FlagAnalyzeExec
		return KindAnalyze
	case kwEXPLAIN, kwDESCRIBE, kwDESC:
		return KindAnalyze
	case kwWITH:
		s.withResolving = true
		s.tables = true // its queries are tables, named or not
		return KindWith
	case kwVALUES:
		return KindValues
	case kwTABLE:
		return KindTable
	case kwGRANT:
		return KindGrant
	case kwREVOKE:
		return KindRevoke
	case kwRENAME:
		return KindRename
	case kwOPTIMIZE:
		return KindOptimize
	case kwCHECK:
		return KindCheck
	case kwREPAIR:
		return KindRepair
	case kwRESET:
		return KindReset
	case kwPURGE:
		return KindPurge
	case kwCHANGE:
		return KindChange
	case kwSTOP:
		return KindStop
	case kwGET:
		k2 := c.nextWord(&la, &t)
		if k2 == kwCURRENT || k2 == kwSTACKED {
			k2 = c.nextWord(&la, &t)
		}
		if k2 == kwDIAGNOSTICS {
			c.st.Flags |= FlagWarnings
		}
		return KindOther
	case kwBACKUP: // MariaDB
		switch k2 := c.nextWord(&la, &t); k2 {
		case kwLOCK:
			return KindLock
		case kwUNLOCK:
			return KindUnlock
		}
		return KindOther
	}
	return KindOther
}

// kill parses KILL [HARD|SOFT] [CONNECTION | QUERY [ID]] [<n>] from la,
// which is just after KILL.
func (c *classifier) kill(la *lexer) {
	var t token
	k := c.nextWord(la, &t)
	if k == kwHARD || k == kwSOFT {
		k = c.nextWord(la, &t)
	}
	var query, byQueryID, hasID bool
	switch k {
	case kwCONNECTION:
		c.nextWord(la, &t)
	case kwQUERY:
		query = true
		if c.nextWord(la, &t) == kwID {
			byQueryID = true
			c.nextWord(la, &t)
		}
	}
	id, ok := parseUint(la.s[t.ns:t.ne])
	if t.kind == tWord && ok {
		if la.next(&t); t.kind == tEOF || t.isPunct(';') {
			hasID = true
		}
	}
	if c.s.first {
		c.st.KillQuery = query
		switch {
		case hasID && byQueryID:
			c.st.KillID, c.st.KillByQueryID = id, true
		case hasID:
			c.st.KillID, c.st.KillHasID = id, true
		}
	}
}

// parseUint parses a non-empty run of decimal digits that fits in a uint64.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, d := range b {
		d -= '0'
		if d > 9 || n > (1<<64-1-uint64(d))/10 {
			return 0, false
		}
		n = n*10 + uint64(d)
	}
	return n, true
}

// word processes a keyword (t.kw != kwNone) after the first one.
func (c *classifier) word(t *token) {
	s := &c.s
	k := t.kw
	if s.withResolving && s.withBody < 0 {
		// the main statement after WITH cte AS (...), ...
		var main Kind
		switch k {
		case kwSELECT:
			main = KindSelect
		case kwUPDATE:
			main = KindUpdate
		case kwDELETE:
			main = KindDelete
		case kwTABLE:
			main = KindTable
		case kwVALUES:
			main = KindValues
		case kwINSERT:
			main = KindInsert
		case kwREPLACE:
			main = KindReplace
		}
		if main != KindOther {
			s.kind = main
			s.withResolving = false
			return
		}
	}
	switch k {
	case kwSQL_CALC_FOUND_ROWS:
		c.st.Flags |= FlagCalcFoundRows
	case kwUPDATE:
		if c.prevWord(kwFOR) {
			c.st.Flags |= FlagForUpdate
		}
	case kwSHARE:
		if c.prevWord(kwFOR) || (c.prevWord(kwIN) && c.prev2Word(kwLOCK)) {
			c.st.Flags |= FlagForUpdate
		}
	case kwINTO:
		switch s.kind {
		case KindSelect, KindWith, KindTable, KindValues:
			c.st.Flags |= FlagSelectInto
		}
	case kwTABLE, kwTABLES, kwSEQUENCE:
		if (s.kind == KindCreate || s.kind == KindDrop) && c.prevWord(kwTEMPORARY) {
			c.st.Flags |= FlagTempTable
		}
	case kwLOCAL:
		if s.kind == KindLoadData && !s.infile {
			c.st.Flags |= FlagLocal
		}
	case kwINFILE:
		s.infile = true
	case kwWARNINGS, kwERRORS:
		if s.kind == KindShow {
			c.st.Flags |= FlagWarnings
		}
	case kwFOR:
		if c.prevWord(kwVALUE) && (c.prev2Word(kwNEXT) || c.prev2Word(kwPREVIOUS)) {
			c.st.Flags |= FlagSideEffectFunc // MariaDB NEXT/PREVIOUS VALUE FOR seq
			s.tables = true                  // the sequence is a table
		}
	case kwFROM:
		s.pendFrom = true
	case kwCONNECTION:
		if s.kind == KindAnalyze && c.prevWord(kwFOR) {
			c.st.Flags |= FlagAnalyzeExec // EXPLAIN FOR CONNECTION n
		}
	case kwANALYZE:
		if s.kind == KindAnalyze {
			c.st.Flags |= FlagAnalyzeExec // EXPLAIN ANALYZE
		}
	case kwPROCEDURE, kwFUNCTION, kwTRIGGER, kwEVENT:
		if (s.kind == KindCreate || s.kind == KindAlter) && s.depth == 0 {
			s.routine = true
		}
	case kwPACKAGE: // MariaDB: CREATE PACKAGE [BODY] p ...; ...; END
		if (s.kind == KindCreate || s.kind == KindAlter) && s.depth == 0 && !s.routine {
			s.routine = true
			s.block++
		}
	case kwPROCESSLIST:
		c.processlist()
	case kwBEGIN, kwCASE:
		if s.routine && s.depth == 0 {
			s.block++
		}
	case kwEND:
		if s.routine && s.depth == 0 {
			s.pendEnd = true
		}
	}
}

// processlist notes the name PROCESSLIST, the current token: how it
// names the list of sessions (Stmt.Processlist). The tokens before it
// are in the ring; spaces and comments may separate them, as in SQL.
func (c *classifier) processlist() {
	p := c.back(1)
	if p != nil && p.isPunct('.') {
		q := c.back(2)
		if q != nil && (q.kind == tWord || q.kind == tQuoted) && eqUpper(c.lx.s[q.ns:q.ne], "INFORMATION_SCHEMA") {
			c.st.Processlist |= ProcesslistTable
		}
		return // another database's table, or a column of a table so named
	}
	if c.s.kind == KindShow {
		switch {
		case c.prevWord(kwSHOW):
			c.st.Processlist |= ProcesslistShow
			return
		case p != nil && p.kind == tWord && eqUpper(c.lx.s[p.ns:p.ne], "FULL") && c.prev2Word(kwSHOW):
			c.st.Processlist |= ProcesslistShowFull
			return
		}
	}
	c.st.Processlist |= ProcesslistName
}

// call processes p followed by '(': a function call if p names a function of
// interest (db.f( and `f`( included).
func (c *classifier) call(p *token) {
	k := p.kw
	if p.kind == tQuoted {
		k = lookupKw(c.lx.s[p.ns:p.ne], p.h)
	}
	switch k {
	case kwGET_LOCK, kwRELEASE_LOCK, kwRELEASE_ALL_LOCKS:
		c.st.Flags |= FlagGetLock | FlagSideEffectFunc
	case kwNEXTVAL, kwSETVAL, kwLASTVAL:
		c.st.Flags |= FlagSideEffectFunc
		c.s.tables = true // the sequence is a table
	case kwIS_USED_LOCK, kwIS_FREE_LOCK, kwSLEEP,
		kwMASTER_POS_WAIT, kwSOURCE_POS_WAIT, kwMASTER_GTID_WAIT,
		kwWAIT_FOR_EXECUTED_GTID_SET, kwWAIT_UNTIL_SQL_THREAD_AFTER_GTIDS, kwUUID_SHORT:
		c.st.Flags |= FlagSideEffectFunc
	case kwFOUND_ROWS:
		c.st.Flags |= FlagFoundRows
	case kwROW_COUNT:
		c.st.Flags |= FlagRowCount
	case kwLAST_INSERT_ID:
		c.st.Flags |= FlagLastInsertID
		c.s.pendLIArg = true
	case kwCONNECTION_ID:
		c.st.Flags |= FlagConnectionID
	}
}

// setTarget processes the token starting an assignment of a SET statement.
func (c *classifier) setTarget(t *token) {
	s := &c.s
	first := s.setFirst
	s.setFirst = false
	s.setExpect = false
	name := kwNone
	switch t.kind {
	case tUserVar:
		return // flagged as a user variable by the caller
	case tSysVar:
		c.st.Flags |= FlagSysVarSet
		if t.scope != scopeGlobal && s.setScope != scopeGlobal &&
			lookupKw(c.lx.s[t.ns:t.ne], t.h) == kwAUTOCOMMIT {
			c.st.Flags |= FlagAutocommit
		}
		return
	case tQuoted:
		name = lookupKw(c.lx.s[t.ns:t.ne], t.h)
	case tWord:
		switch t.kw {
		case kwGLOBAL, kwPERSIST, kwPERSIST_ONLY, kwSESSION, kwLOCAL:
			c.st.Flags |= FlagSysVarSet
			s.setScope = scopeOf(t.kw)
			s.setExpect = true // the variable name (or TRANSACTION) follows
			return
		case kwTRANSACTION:
			c.st.Flags |= FlagSysVarSet
			if s.setScope == scopeNone {
				c.st.Flags |= FlagTrxIsolationSet
			}
			s.setActive = false
			return
		case kwNAMES, kwCHARACTER, kwCHARSET:
			c.st.Flags |= FlagSysVarSet
			return
		}
		if first {
			switch t.kw {
			case kwROLE, kwRESOURCE: // SET ROLE, SET RESOURCE GROUP: session state
				c.st.Flags |= FlagSysVarSet
				s.setActive = false
				return
			case kwPASSWORD, kwDEFAULT, kwSTATEMENT: // SET PASSWORD, SET DEFAULT ROLE, SET STATEMENT ... FOR
				c.st.Flags |= FlagSetNotVariable
				s.setActive = false
				return
			}
		}
		name = t.kw
	default:
		return // not an assignment
	}
	c.st.Flags |= FlagSysVarSet
	if name == kwAUTOCOMMIT && s.setScope != scopeGlobal {
		c.st.Flags |= FlagAutocommit
	}
}

// userAtHost reports whether the user variable token t is in fact the host
// part of an account name: the token just before it ends exactly where t
// starts, is a string, a quoted identifier or a name that is not a keyword
// introducing an expression, and the statement takes account names.
func (c *classifier) userAtHost(t *token) bool {
	p := c.back(1)
	if p == nil || p.end != t.start {
		return false
	}
	switch c.s.kind {
	case KindGrant, KindRevoke, KindCreate, KindAlter, KindDrop, KindRename, KindSet, KindShow:
	default:
		return false
	}
	switch p.kind {
	case tString, tQuoted:
		return true
	case tWord:
		return !exprKw[p.kw]
	}
	return false
}
