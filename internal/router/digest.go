package router

import "math/bits"

// This file holds the statement digest: a hash of a statement's normalized
// shape, computed token by token inside Classify's lexer pass, so that
// statement telemetry groups statements by shape at no extra pass. The
// shape is the statement's tokens with
//   - every literal (number, string, hex, bit, N'..', X'..', B'..',
//     _charset'..', a sign before a number included) and every '?'
//     parameter marker replaced by one placeholder;
//   - a parenthesized list of only literals, (1, 2, 3), reduced to one
//     list placeholder, so that IN (1, 2) and IN (1, 2, 3) share a digest
//     (a single literal, (1), stays a literal: IN (?) differs from IN (...));
//   - the rows of a multi-row VALUES after the first left out;
//   - words compared in any ASCII case (keywords and names alike: the
//     digest folds `T` and `t`), whitespace and comments left out, except
//     optimizer hints /*+ ... */ (but shardgate's routing hints); the
//     contents of executable comments are code, their markers are not;
//   - a trailing ';' left out.
//
// DigestText renders the same normalization as text for the admin views.

// Token tags mixed into the digest with the token's own bits.
const (
	dgWord  uint64 = 16 << 56 // variables and quoted names: their token kind << 56
	dgPunct uint64 = 17 << 56
	dgLit   uint64 = 18 << 56
	dgList  uint64 = 19 << 56
	dgHint  uint64 = 20 << 56
)

// List states (digester.st bits 0-1): a '(' was just mixed in, then
// literals and commas are deferred until it is known whether only
// literals follow up to the ')'.
const (
	listNone  uint8 = iota
	listOpen        // just after '('
	listLits        // n literals, the last one just seen
	listComma       // n literals and a ',' after them
)

// Multi-row VALUES states (digester.st bits 2-4).
const (
	rowsNone  uint8 = iota
	rowsFirst       // after VALUES: its first row is mixed in
	rowsAfter       // a row just closed at the VALUES depth
	rowsComma       // ... and a ',' after it (deferred)
	rowsSkip        // inside a further row: left out
)

const (
	stList     = 3
	stRowShift = 2
	stRows     = 7 << stRowShift
	stSemi     = 1 << 5 // a ';' is deferred: only one followed by a token counts
)

// digester computes the digest of the tokens Classify lexes. It never
// allocates unless out is set (DigestText). Its state st is zero in the
// common case, so that most tokens cost one mix and a few tests.
type digester struct {
	h     uint64
	skip  int // tokens starting before this offset belong to the previous literal
	depth int32
	st    uint8 // list, rows and ';' states

	listN     int
	rowsDepth int32
	hintDone  int // end of the last optimizer hint mixed in

	// out, when not nil, receives the normalized text (DigestText).
	out     *[]byte
	outPrev byte // the last byte class appended: 0 none, 'a' a word-like token, else the punctuation
	prevEnd int  // where the previous token ends (for the text)
	adj     bool // the token follows the previous one without a gap
	// started: the current statement has a token; first: the token is
	// its first (a statement keyword, spelled in upper case).
	started, first bool
}

const digestSeed = 0xcbf29ce484222325

func (d *digester) init() { d.h = digestSeed }

func (d *digester) mix(v uint64) {
	d.h = bits.RotateLeft64((d.h^v)*0x100000001b3, 29)
}

func (d *digester) list() uint8     { return d.st & stList }
func (d *digester) setList(v uint8) { d.st = d.st&^stList | v }
func (d *digester) rows() uint8     { return d.st & stRows >> stRowShift }
func (d *digester) setRows(v uint8) { d.st = d.st&^stRows | v<<stRowShift }

// digest processes t, which feed has just seen (t.kw filled in for
// words); the previous token of the statement is c.back(1).
func (c *classifier) digest(t *token) {
	d := &c.dig
	if t.start < d.skip {
		return // inside a literal that spans several tokens (4.2e-1, X'2A')
	}
	l := &c.lx
	if l.hintEnd != d.hintDone {
		d.hints(l.s, l.hintStart, l.hintEnd)
		d.hintDone = l.hintEnd
	}
	if d.st != 0 && d.rows() == rowsSkip {
		d.skipRow(t)
		return
	}
	if d.out != nil {
		d.adj = d.prevEnd == t.start
		d.prevEnd = t.end
		if !t.isPunct(';') {
			d.first = !d.started
			d.started = true
		}
	}
	s := l.s
	switch t.kind {
	case tWord:
		if c := s[t.start]; c-'0' < 10 || t.end < len(s) && s[t.end] == '\'' {
			if end, ok := wordLiteral(s, t); ok {
				d.lit(end)
				return
			}
		}
		if d.st != 0 {
			d.before(t)
		}
		d.mix(dgWord | uint64(t.h) | uint64((t.ne-t.ns)&0xffffff)<<32)
		if k := t.kw; k == kwVALUES || k == kwVALUE {
			d.setRows(rowsFirst)
			d.rowsDepth = d.depth
		}
		if d.out != nil {
			w := s[t.start:t.end]
			d.emitWordText(w, reserved.has(w, t.h) || t.kw != kwNone && d.first)
		}
	case tString:
		d.lit(t.end)
	case tPunct:
		switch t.c {
		case '?':
			d.lit(t.end)
			return
		case ';':
			d.semicolon()
			return
		case '.':
			if t.start == 0 || !isIdent[s[t.start-1]] && s[t.start-1] != '`' {
				if t.end < len(s) && s[t.end]-'0' < 10 { // .5
					end, _ := scanNumber(s, t.start)
					d.lit(end)
					return
				}
			}
		case '-', '+':
			if end, ok := signedNumber(s, t.end); ok && !c.afterOperand() {
				d.lit(end)
				return
			}
		}
		if d.st != 0 && d.before(t) {
			return
		}
		d.punct(t)
	default: // quoted identifier, variables
		if d.st != 0 {
			d.before(t)
		}
		d.mix(uint64(t.kind)<<56 | uint64(t.h) | uint64((t.ne-t.ns)&0xffffff)<<32 | uint64(t.scope)<<48)
		d.emitText(s[t.start:t.end])
	}
}

// wordLiteral reports whether the word t starts a literal, and where the
// literal ends: a number (not a name after '.', t.5), 0x.., 0b.., N'..',
// X'..', B'..', or a charset introducer and its string _utf8mb4'..'.
func wordLiteral(s []byte, t *token) (int, bool) {
	c := s[t.start]
	if c-'0' < 10 {
		if t.start > 0 && s[t.start-1] == '.' {
			return 0, false
		}
		end, kind := scanNumber(s, t.start)
		return end, kind != 0
	}
	if t.end == t.start+1 && (c|0x20 == 'n' || c|0x20 == 'x' || c|0x20 == 'b') || c == '_' {
		end, _ := scanQuoted(s, t.end+1, '\'', c|0x20 == 'n' || c == '_')
		return end, true
	}
	return 0, false
}

// signedNumber reports whether a number follows a sign that ends at i
// (whitespace between them allowed), and where it ends.
func signedNumber(s []byte, i int) (int, bool) {
	for i < len(s) && s[i] <= ' ' {
		i++
	}
	if i < len(s) && (s[i]-'0' < 10 || s[i] == '.' && i+1 < len(s) && s[i+1]-'0' < 10) {
		end, kind := scanNumber(s, i)
		return end, kind != 0
	}
	return 0, false
}

// afterOperand reports whether the previous token ends an operand (a
// name, a literal, a ')'), after which '-' and '+' are binary operators.
func (c *classifier) afterOperand() bool {
	p := c.back(1)
	if p == nil {
		return false
	}
	switch p.kind {
	case tWord:
		return p.kw == kwNone || !exprKw[p.kw] || operandKw[p.kw] && c.operandAt(1)
	case tPunct:
		return p.c == ')' || p.c == '?'
	}
	return true
}

// operandKw marks the keywords of exprKw that may also be an operand: a
// column name (value, any, some, escape, do, execute are not reserved) or
// the DEFAULT value. Where an operand may stand they are one (SET value =
// value - 1); elsewhere they are keywords (a INT DEFAULT -1, DO -1).
var operandKw = func() (t [kwCount]bool) {
	for _, k := range [...]kw{kwVALUE, kwDEFAULT, kwANY, kwSOME, kwESCAPE, kwDO, kwEXECUTE} {
		t[k] = true
	}
	return t
}()

// operandAt reports whether the token n back stands where an operand may:
// after '(', ',', an operator or a keyword that starts an expression (not
// at the start of a statement).
func (c *classifier) operandAt(n uint) bool {
	q := c.back(n + 1)
	if q == nil {
		return false
	}
	switch q.kind {
	case tWord:
		return q.kw != kwNone && exprKw[q.kw]
	case tPunct:
		return q.c != ')' && q.c != '?' && q.c != ';'
	}
	return false
}

// lit processes a literal or parameter marker that ends at end.
func (d *digester) lit(end int) {
	d.skip = end
	if d.out != nil {
		d.prevEnd = end
	}
	if d.st != 0 {
		d.endRows(false)
		if d.st&stSemi != 0 {
			d.st &^= stSemi
			d.emitPunct(';')
		}
		switch d.list() {
		case listOpen:
			d.setList(listLits)
			d.listN = 1
			return
		case listComma:
			d.setList(listLits)
			d.listN++
			return
		}
	}
	d.emitLit()
}

// before settles the list and rows states at t, a token that is no
// literal. It reports whether t is consumed (a deferred ',' or a further
// row's '(').
func (d *digester) before(t *token) bool {
	switch d.list() {
	case listLits:
		if t.isPunct(',') {
			d.setList(listComma)
			return true
		}
		if t.isPunct(')') {
			if d.listN == 1 {
				d.emitLit()
			} else {
				d.emitList()
			}
			d.setList(listNone)
			break
		}
		d.flushList()
	case listComma, listOpen:
		d.flushList()
	}
	switch {
	case d.rows() == rowsAfter && t.isPunct(','):
		d.setRows(rowsComma)
		return true
	case d.rows() == rowsComma && t.isPunct('('):
		d.setRows(rowsSkip)
		d.depth++
		return true
	}
	d.endRows(t.isPunct('('))
	if d.st&stSemi != 0 {
		d.st &^= stSemi
		d.emitPunct(';')
	}
	return false
}

// semicolon defers a ';': it counts only when a token follows.
func (d *digester) semicolon() {
	d.flushList()
	d.flushRows()
	d.st |= stSemi
	d.started = false
}

// punct processes a punctuation token other than ';'.
func (d *digester) punct(t *token) {
	switch t.c {
	case '(':
		d.depth++
		d.emitPunct('(')
		d.setList(listOpen)
		return
	case ')':
		if d.depth > 0 {
			d.depth--
		}
		d.emitPunct(')')
		if d.st != 0 && d.rows() == rowsFirst && d.depth == d.rowsDepth {
			d.setRows(rowsAfter)
		}
		return
	}
	d.emitPunct(t.c)
}

// skipRow follows a further row of a multi-row VALUES to its end.
func (d *digester) skipRow(t *token) {
	switch {
	case t.isPunct('('):
		d.depth++
	case t.isPunct(')'):
		d.depth--
		if d.depth == d.rowsDepth {
			d.setRows(rowsAfter)
		}
	}
}

// flushList mixes in the literals deferred by a list that turned out not
// to be one of literals only.
func (d *digester) flushList() {
	switch d.list() {
	case listLits, listComma:
		for i := 0; i < d.listN; i++ {
			if i > 0 {
				d.emitPunct(',')
			}
			d.emitLit()
		}
		if d.list() == listComma {
			d.emitPunct(',')
		}
	}
	d.setList(listNone)
}

// endRows ends a multi-row VALUES at a token that is no further row
// (open: the token is a '(').
func (d *digester) endRows(open bool) {
	switch d.rows() {
	case rowsFirst:
		if d.depth == d.rowsDepth && !open {
			d.setRows(rowsNone) // VALUE(x) is a function, NEXT VALUE FOR no row
		}
	case rowsAfter:
		d.setRows(rowsNone)
	case rowsComma:
		d.flushRows()
	}
}

// flushRows mixes in the ',' deferred after a VALUES row that no row
// follows.
func (d *digester) flushRows() {
	if d.rows() == rowsComma {
		d.emitPunct(',')
	}
	d.setRows(rowsNone)
}

// hints mixes in the optimizer hint comments /*+ ... */ in s[i:end], a
// gap between tokens, each whitespace left out. shardgate's own hints
// (/*+ shardgate:shard=s1 */) are left out: they route a statement, its
// shape is the same on every shard.
func (d *digester) hints(s []byte, i, end int) {
	walkGap(s, i, end, false, func(at int, k commentEvent) {
		if k != commentPlain || s[at] != '/' || at+2 >= end || s[at+2] != '+' {
			return
		}
		if _, ok := shardgateHint(s, at+2); !ok {
			d.hint(s[at:skipComment(s, at+2)])
		}
	})
}

// hint mixes in an optimizer hint comment, whitespace left out.
func (d *digester) hint(c []byte) {
	h := uint64(digestSeed)
	for _, b := range c {
		if b > ' ' {
			h = (h ^ uint64(b)) * 0x100000001b3
		}
	}
	d.mix(dgHint ^ h>>8)
	d.emitText(c)
}

// finish returns the digest once every token has been seen.
func (d *digester) finish() uint64 {
	if d.rows() != rowsSkip {
		d.flushList()
		d.flushRows()
	}
	return d.h
}

func (d *digester) emitLit() {
	d.mix(dgLit)
	d.emitText(litText)
}

func (d *digester) emitList() {
	d.mix(dgList)
	d.emitText(listText)
}

func (d *digester) emitPunct(c byte) {
	d.mix(dgPunct | uint64(c))
	if d.out != nil {
		d.emitPunctText(c, d.adj)
	}
}

var (
	litText  = []byte("?")
	listText = []byte("...")
)

// The text of the normalization (DigestText): tokens separated by one
// space, except around parentheses, commas, dots and operators written
// together (>=, <>, :=).

// emitText appends a word-like token (a name, a literal, a hint).
func (d *digester) emitText(b []byte) {
	if d.out == nil {
		return
	}
	d.space(d.outPrev != 0 && d.outPrev != '(' && d.outPrev != '.')
	*d.out = append(*d.out, b...)
	d.outPrev = 'a'
}

// emitWordText appends a word, in upper case if it is a keyword.
func (d *digester) emitWordText(w []byte, keyword bool) {
	if !keyword {
		d.emitText(w)
		return
	}
	d.space(d.outPrev != 0 && d.outPrev != '(' && d.outPrev != '.')
	for _, c := range w {
		*d.out = append(*d.out, upper(c))
	}
	d.outPrev = 'a'
}

// emitPunctText appends a punctuation byte; adj: written right after the
// previous token.
func (d *digester) emitPunctText(c byte, adj bool) {
	var sp bool
	switch {
	case d.outPrev == 0 || d.outPrev == '(' || d.outPrev == '.':
	case c == ')' || c == ',' || c == '.' || c == ';':
	case c == '(':
		sp = !adj || d.outPrev != 'a'
	case adj && isOperator(c) && isOperator(d.outPrev):
	default:
		sp = true
	}
	d.space(sp)
	*d.out = append(*d.out, c)
	d.outPrev = c
}

func (d *digester) space(sp bool) {
	if sp {
		*d.out = append(*d.out, ' ')
	}
}

func isOperator(c byte) bool {
	switch c {
	case '<', '>', '=', '!', ':', '|', '&', '^', '~', '*', '/', '%', '+', '-':
		return true
	}
	return false
}

// DigestText returns the normalized text of sql whose digest Classify
// computes (Stmt.Digest): literals as ?, lists of literals as (...),
// keywords in upper case, names as written, comments left out, e.g.
// "SELECT c FROM sbtest1 WHERE id = ?". It allocates; telemetry calls it
// once per new digest.
func DigestText(sql []byte) string {
	out := make([]byte, 0, len(sql))
	var c classifier
	c.dig.out = &out
	c.run(sql)
	return string(out)
}
