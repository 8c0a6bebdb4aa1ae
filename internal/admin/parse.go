package admin

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is what an admin statement does.
type Kind uint8

// The admin statements, and the session statements clients and drivers
// send on connecting (SET, SELECT @@..., SHOW WARNINGS), which the admin
// port answers so that they connect cleanly.
const (
	ShowBackends Kind = iota + 1
	ShowSessions
	ShowDigests
	ResetDigests
	ShowSharding
	ShowConfig
	ShowVersion
	ShowStatus
	ShowTransactions
	ShowProxies
	SetBackend
	KillSession
	ReloadConfig
	SessionSet      // SET of session variables, names, transaction: accepted, nothing to set
	SessionSelect   // SELECT @@var, DATABASE(), VERSION(), literals...
	SessionWarnings // SHOW WARNINGS / SHOW ERRORS: none
)

// Statement is a parsed admin statement.
type Statement struct {
	Kind Kind
	// SHOW QUERY DIGESTS: the column to order by ("" = the default order),
	// its direction, and the row limit (-1 = none).
	OrderBy string
	Desc    bool
	Limit   int
	// SET BACKEND: the server and its new state.
	Cluster, Address string
	Offline          bool
	// KILL SESSION: the connection id.
	SessionID uint32
	// SessionSelect: the items selected.
	Items []SelectItem
}

// SelectItem is one item of a session SELECT: a system variable (Var),
// a function without arguments (Func) or a literal (Literal), named as
// the server names the column (its text, or its alias).
type SelectItem struct {
	Name    string
	Var     string // lower case, without @@ and scope
	Func    string // upper case
	Literal string
	Numeric bool // a numeric literal
}

// Syntax is the list of admin statements, for error messages and help.
const Syntax = "SHOW BACKENDS; SHOW SESSIONS; SHOW QUERY DIGESTS [ORDER BY <column> [ASC|DESC]] [LIMIT <n>]; " +
	"RESET QUERY DIGESTS; SHOW SHARDING; SHOW CONFIG; SHOW VERSION; SHOW STATUS; SHOW TRANSACTIONS; SHOW PROXIES; " +
	"SET BACKEND <cluster>.<host:port> OFFLINE|ONLINE; KILL SESSION <id>; RELOAD CONFIG"

// ParseError is a statement the admin port does not know, or a malformed
// one.
type ParseError struct {
	Empty bool   // nothing but comments and blanks
	Near  string // the text from where the parser gave up
	Msg   string
}

func (e *ParseError) Error() string {
	if e.Empty {
		return "Query was empty"
	}
	return fmt.Sprintf("%s near '%s'; the admin port knows: %s", e.Msg, truncate(e.Near, 40), Syntax)
}

// Parse parses one admin statement: keywords in any case, comments
// allowed, an optional trailing semicolon.
func Parse(sql string) (*Statement, error) {
	toks, err := lex(sql)
	if err != nil {
		return nil, err
	}
	p := &parser{src: sql, toks: toks}
	if len(toks) == 0 {
		return nil, &ParseError{Empty: true}
	}
	if err := p.oneStatement(); err != nil {
		return nil, err
	}
	st, err := p.statement()
	if err != nil {
		return nil, err
	}
	if p.peek().is(";") {
		p.next()
	}
	if !p.done() {
		return nil, p.errorf("unexpected text after the statement (one statement at a time)")
	}
	return st, nil
}

// oneStatement refuses a query holding a ';' with anything after it,
// before parsing: a statement the parser reads loosely must not hide a
// second one (SET autocommit=1; RELOAD CONFIG).
func (p *parser) oneStatement() error {
	for i, t := range p.toks[:len(p.toks)-1] {
		if t.is(";") {
			p.pos = i + 1
			return p.errorf("more than one statement: the admin port runs one statement per query")
		}
	}
	return nil
}

type parser struct {
	src  string
	toks []token
	pos  int
}

func (p *parser) done() bool { return p.pos >= len(p.toks) }

// peek returns the next token, or the end token.
func (p *parser) peek() token {
	if p.done() {
		return token{kind: tokEnd, start: len(p.src)}
	}
	return p.toks[p.pos]
}

func (p *parser) next() token {
	t := p.peek()
	if !p.done() {
		p.pos++
	}
	return t
}

// accept consumes the next token if it is the keyword (or symbol) w.
func (p *parser) accept(w string) bool {
	if p.peek().is(w) {
		p.pos++
		return true
	}
	return false
}

// expect consumes the keywords ws in order, or fails.
func (p *parser) expect(ws ...string) error {
	for _, w := range ws {
		if !p.accept(w) {
			return p.errorf("expected %s", strings.ToUpper(w))
		}
	}
	return nil
}

func (p *parser) errorf(format string, args ...any) error {
	return &ParseError{Near: p.src[p.peek().start:], Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) statement() (*Statement, error) {
	switch {
	case p.accept("show"):
		return p.show()
	case p.accept("reset"):
		if err := p.expect("query", "digests"); err != nil {
			return nil, err
		}
		return &Statement{Kind: ResetDigests}, nil
	case p.accept("set"):
		if p.accept("backend") {
			return p.setBackend()
		}
		return p.sessionSet()
	case p.accept("kill"):
		return p.kill()
	case p.accept("reload"):
		if err := p.expect("config"); err != nil {
			return nil, err
		}
		return &Statement{Kind: ReloadConfig}, nil
	case p.accept("select"):
		return p.sessionSelect()
	}
	p.pos = 0
	return nil, p.errorf("unknown statement")
}

func (p *parser) show() (*Statement, error) {
	simple := map[string]Kind{"backends": ShowBackends, "sessions": ShowSessions, "sharding": ShowSharding,
		"config": ShowConfig, "version": ShowVersion, "status": ShowStatus, "transactions": ShowTransactions, "proxies": ShowProxies, "warnings": SessionWarnings, "errors": SessionWarnings}
	t := p.peek()
	if t.kind == tokWord {
		if k, ok := simple[strings.ToLower(t.text)]; ok {
			p.next()
			return &Statement{Kind: k}, nil
		}
	}
	if !p.accept("query") {
		return nil, p.errorf("unknown SHOW statement")
	}
	if err := p.expect("digests"); err != nil {
		return nil, err
	}
	st := &Statement{Kind: ShowDigests, Limit: -1}
	if p.accept("order") {
		if err := p.expect("by"); err != nil {
			return nil, err
		}
		col, desc, err := p.orderBy()
		if err != nil {
			return nil, err
		}
		st.OrderBy, st.Desc = col, desc
	}
	if p.accept("limit") {
		n, err := p.number("LIMIT")
		if err != nil {
			return nil, err
		}
		st.Limit = int(min(n, 1<<31-1))
	}
	return st, nil
}

// orderBy parses "<column> [ASC|DESC]".
func (p *parser) orderBy() (col string, desc bool, err error) {
	t := p.peek()
	if t.kind != tokWord && t.kind != tokQuoted {
		return "", false, p.errorf("expected a column after ORDER BY")
	}
	p.next()
	switch {
	case p.accept("desc"):
		desc = true
	case p.accept("asc"):
	}
	return strings.ToLower(t.text), desc, nil
}

// number parses an unsigned integer for the clause named what.
func (p *parser) number(what string) (uint64, error) {
	t := p.peek()
	n, err := strconv.ParseUint(t.text, 10, 64)
	if t.kind != tokWord || err != nil {
		return 0, p.errorf("%s needs a non-negative integer", what)
	}
	p.next()
	return n, nil
}

// setBackend parses "<cluster>.<host:port> OFFLINE|ONLINE". The target is
// the text up to the next blank, its parts maybe backquoted: main.h:3306,
// `main`.`h:3306`, main.`h:3306`. It splits at its first dot outside
// backquotes: a cluster name with a dot must be backquoted.
func (p *parser) setBackend() (*Statement, error) {
	first := p.peek()
	if first.kind != tokWord && first.kind != tokQuoted {
		return nil, p.errorf("expected <cluster>.<host:port> after SET BACKEND")
	}
	start := p.pos
	var cluster, addr strings.Builder
	split := false
	for i := 0; !p.done(); i++ {
		t := p.peek()
		if i > 0 && t.spaceBefore || t.kind != tokWord && t.kind != tokQuoted && !t.is(".") {
			break
		}
		p.next()
		if split {
			addr.WriteString(t.text)
			continue
		}
		if before, after, ok := strings.Cut(t.text, "."); ok && t.kind != tokQuoted {
			cluster.WriteString(before)
			addr.WriteString(after)
			split = true
			continue
		}
		cluster.WriteString(t.text)
	}
	if !split || cluster.Len() == 0 || addr.Len() == 0 {
		p.pos = start
		return nil, p.errorf("expected <cluster>.<host:port> after SET BACKEND")
	}
	st := &Statement{Kind: SetBackend, Cluster: cluster.String(), Address: addr.String()}
	switch {
	case p.accept("offline"):
		st.Offline = true
	case p.accept("online"):
	default:
		return nil, p.errorf("expected OFFLINE or ONLINE")
	}
	return st, nil
}

func (p *parser) kill() (*Statement, error) {
	if err := p.expect("session"); err != nil {
		return nil, err
	}
	n, err := p.number("KILL SESSION")
	if err != nil {
		return nil, err
	}
	if n == 0 || n > 1<<32-1 {
		p.pos--
		return nil, p.errorf("KILL SESSION needs a connection id from SHOW SESSIONS")
	}
	return &Statement{Kind: KillSession, SessionID: uint32(n)}, nil
}

// sessionSelect parses the SELECTs drivers and clients send on
// connecting: items that are system variables, functions without
// arguments or literals, each maybe with an alias, then FROM DUAL and
// LIMIT n.
func (p *parser) sessionSelect() (*Statement, error) {
	st := &Statement{Kind: SessionSelect}
	for {
		it, err := p.selectItem()
		if err != nil {
			return nil, err
		}
		st.Items = append(st.Items, it)
		if !p.accept(",") {
			break
		}
	}
	if p.accept("from") {
		// Pools validate connections with SELECT 1 FROM DUAL.
		if err := p.expect("dual"); err != nil {
			return nil, err
		}
	}
	if p.accept("limit") {
		if _, err := p.number("LIMIT"); err != nil {
			return nil, err
		}
	}
	return st, nil
}

func (p *parser) selectItem() (SelectItem, error) {
	t := p.peek()
	var it SelectItem
	switch {
	case t.kind == tokVar:
		name := strings.ToLower(strings.TrimPrefix(t.text, "@@"))
		for _, scope := range []string{"session.", "global.", "local."} {
			name = strings.TrimPrefix(name, scope)
		}
		it = SelectItem{Name: t.text, Var: name}
		p.next()
	case t.kind == tokString:
		it = SelectItem{Name: t.text, Literal: t.text}
		p.next()
	case t.kind == tokWord && isNumber(t.text):
		it = SelectItem{Name: t.text, Literal: t.text, Numeric: true}
		p.next()
	case t.kind == tokWord && p.pos+2 < len(p.toks) && p.toks[p.pos+1].is("(") && p.toks[p.pos+2].is(")"):
		p.pos += 3
		it = SelectItem{Name: p.src[t.start : p.toks[p.pos-1].start+1], Func: strings.ToUpper(t.text)}
	default:
		p.pos = 0 // not a SELECT drivers send: an unknown statement
		return it, p.errorf("unknown statement")
	}
	if p.accept("as") || p.peek().kind == tokQuoted || p.peek().kind == tokString ||
		p.peek().kind == tokWord && !p.peek().is("limit") && !p.peek().is("from") && !isNumber(p.peek().text) {
		a := p.peek()
		if a.kind != tokWord && a.kind != tokQuoted && a.kind != tokString {
			return it, p.errorf("expected an alias")
		}
		p.next()
		it.Name = a.text
	}
	return it, nil
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil && s != "" && (s[0] >= '0' && s[0] <= '9' || s[0] == '.')
}

// ParseOrder parses the order of the digests over HTTP (?order=count desc),
// as SHOW QUERY DIGESTS's ORDER BY.
func ParseOrder(s string) (col string, desc bool, err error) {
	toks, err := lex(s)
	if err != nil {
		return "", false, err
	}
	p := &parser{src: s, toks: toks}
	if col, desc, err = p.orderBy(); err != nil {
		return "", false, err
	}
	if !p.done() {
		return "", false, p.errorf("unexpected text after the order")
	}
	return col, desc, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
