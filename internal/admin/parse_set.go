package admin

import "strings"

// setBackendSyntax is what a SET that names a backend should look like.
const setBackendSyntax = "SET BACKEND <cluster>.<host:port> OFFLINE|ONLINE"

// sessionSet parses the SETs drivers send on connecting, which the admin
// port accepts and ignores:
//
//	SET NAMES <charset> [COLLATE <collation>]
//	SET CHARACTER SET <charset> | SET CHARSET <charset>
//	SET [SESSION|GLOBAL|LOCAL] TRANSACTION <characteristic>[, ...]
//	SET [SESSION|GLOBAL|LOCAL] <name> = <value>[, ...]
//	SET @@[<scope>.]<name> = <value>[, ...]
//
// Anything else is refused rather than ignored: an OK to a mistyped
// admin statement (SET BACKENDS ...) would tell the operator it ran.
func (p *parser) sessionSet() (*Statement, error) {
	st := &Statement{Kind: SessionSet}
	switch {
	case p.accept("names"):
		if err := p.charset("SET NAMES"); err != nil {
			return nil, err
		}
		if p.accept("collate") {
			if err := p.charset("COLLATE"); err != nil {
				return nil, err
			}
		}
		return st, nil
	case p.accept("character"):
		if err := p.expect("set"); err != nil {
			return nil, err
		}
		return st, p.charset("SET CHARACTER SET")
	case p.accept("charset"):
		return st, p.charset("SET CHARSET")
	}
	if p.isScope(p.peek()) && p.pos+1 < len(p.toks) && p.toks[p.pos+1].is("transaction") {
		p.next()
	}
	if p.accept("transaction") {
		return st, p.transaction()
	}
	for {
		if err := p.assignment(); err != nil {
			return nil, err
		}
		if !p.accept(",") {
			return st, nil
		}
	}
}

func (p *parser) isScope(t token) bool {
	return t.is("session") || t.is("global") || t.is("local")
}

// charset parses a character set or collation name, or DEFAULT.
func (p *parser) charset(what string) error {
	t := p.peek()
	if t.kind != tokWord && t.kind != tokString && t.kind != tokQuoted {
		return p.errorf("%s needs a character set or collation name", what)
	}
	p.next()
	return nil
}

// transaction parses SET TRANSACTION's characteristics: ISOLATION LEVEL
// <level>, READ WRITE, READ ONLY.
func (p *parser) transaction() error {
	for {
		switch {
		case p.accept("isolation"):
			if err := p.expect("level"); err != nil {
				return err
			}
			if err := p.isolationLevel(); err != nil {
				return err
			}
		case p.accept("read"):
			if !p.accept("write") && !p.accept("only") {
				return p.errorf("expected WRITE or ONLY after READ")
			}
		default:
			return p.errorf("expected ISOLATION LEVEL, READ WRITE or READ ONLY after SET TRANSACTION")
		}
		if !p.accept(",") {
			return nil
		}
	}
}

func (p *parser) isolationLevel() error {
	switch {
	case p.accept("read"):
		if p.accept("committed") || p.accept("uncommitted") {
			return nil
		}
	case p.accept("repeatable"):
		if p.accept("read") {
			return nil
		}
	case p.accept("serializable"):
		return nil
	}
	return p.errorf("expected READ UNCOMMITTED, READ COMMITTED, REPEATABLE READ or SERIALIZABLE")
}

// assignment parses "[SESSION|GLOBAL|LOCAL] <name> = <value>" or
// "@@[<scope>.]<name> = <value>".
func (p *parser) assignment() error {
	if p.isScope(p.peek()) {
		p.next()
	}
	t := p.peek()
	name := strings.ToLower(t.text)
	switch {
	case t.kind == tokVar:
		name = strings.TrimPrefix(name, "@@")
		for _, scope := range []string{"session.", "global.", "local."} {
			name = strings.TrimPrefix(name, scope)
		}
	case t.kind == tokQuoted, t.kind == tokWord && !isNumber(t.text):
	default:
		return p.errorf("expected a session variable, NAMES, CHARACTER SET or TRANSACTION after SET, or %s", setBackendSyntax)
	}
	if strings.HasPrefix(name, "backend") {
		return p.errorf("not a session variable; a server is taken out of service with %s", setBackendSyntax)
	}
	p.next()
	if !p.accept("=") {
		return p.errorf("expected = after the variable %s", t.text)
	}
	return p.value(0)
}

// maxValueDepth bounds the nesting of a SET value's function calls.
const maxValueDepth = 8

// value parses a SET value: a number (maybe signed), a word (ON, OFF,
// DEFAULT, NULL, a name), a string, a system variable, or a function of
// such values in parentheses (sql_mode = CONCAT(@@sql_mode, ',X')).
func (p *parser) value(depth int) error {
	if depth > maxValueDepth {
		return p.errorf("value nested too deeply")
	}
	if p.accept("-") || p.accept("+") {
		if t := p.peek(); t.kind != tokWord || !isNumber(t.text) {
			return p.errorf("expected a number after the sign")
		}
		p.next()
		return nil
	}
	if p.accept("(") {
		return p.closeArgs(depth, false)
	}
	switch t := p.peek(); {
	case t.kind == tokWord:
		p.next()
		if p.accept("(") {
			return p.closeArgs(depth, true)
		}
		return nil
	case t.kind == tokString, t.kind == tokQuoted, t.kind == tokVar:
		p.next()
		return nil
	}
	return p.errorf("expected a value")
}

// closeArgs parses the values in parentheses after the '(' and the ')':
// a function's arguments (none or several) or one parenthesized value.
func (p *parser) closeArgs(depth int, call bool) error {
	if call && p.accept(")") {
		return nil
	}
	for {
		if err := p.value(depth + 1); err != nil {
			return err
		}
		if !call || !p.accept(",") {
			break
		}
	}
	if !p.accept(")") {
		return p.errorf("expected )")
	}
	return nil
}
