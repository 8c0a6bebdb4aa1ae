package router

import "github.com/cespare/xxhash/v2"

// This file holds the shape scanner: one pass of the classifier's lexer
// that finds a statement's literals and parameter markers and reduces the
// rest to a canonical key, so that statements differing only in literal
// values share one cached plan. It reads comments, quoting and executable
// comments exactly as Classify does, because it runs the same lexer.

// LitKind is the kind of a literal token.
type LitKind uint8

const (
	LitNumber  LitKind = iota + 1 // 42, 4.2, .5, 1., 4.2e1, 1e-3
	LitString                     // '...' or "..." (a string: ANSI_QUOTES is not supported)
	LitNString                    // N'...': a string in the national character set (utf8)
	LitHex                        // 0x2A
	LitXString                    // X'2A': a hex string
	LitBit                        // 0b101, b'101'
)

// Lit is a literal token: its span in the SQL text (quotes and any N, X or
// B prefix included) and its kind. A sign before a number is a separate
// token, and a charset introducer (_utf8mb4'x') a separate word.
type Lit struct {
	Start, End int32
	Kind       LitKind
}

// ShapeFlags are facts the scanner found in the code of a statement (not
// in strings or comments) that a planner needs to know before it trusts a
// parser with the statement.
type ShapeFlags uint8

const (
	// ShapeMariaDBComment: a MariaDB executable comment /*M! ... */.
	ShapeMariaDBComment ShapeFlags = 1 << iota
	// ShapeQuotedUserVar: a user variable named by a string, @'x' or @"x".
	ShapeQuotedUserVar
	// ShapeSessionScope: a system variable with an explicit session scope,
	// @@session.x or @@local.x.
	ShapeSessionScope
	// ShapeBindName: ':' directly followed by a name, such as :v1, which
	// is no MySQL syntax but a bind variable to some parsers.
	ShapeBindName
	// ShapeUnterminated: a string, quoted identifier or variable name
	// whose closing quote is missing.
	ShapeUnterminated
)

// Shape is what ScanShape finds in a statement. A Shape is meant to be
// reused: ScanShape keeps the capacity of its slices.
type Shape struct {
	// Hash is a hash of Key.
	Hash uint64
	// Key is the statement reduced to its shape: its tokens, every
	// literal and parameter marker replaced by a placeholder, reserved
	// words in upper case, other words and quoted names as written,
	// comments left out except optimizer hints (/*+ ... */), shardgate
	// hints and the markers of executable comments, which change what
	// runs. Two statements with equal keys differ only in literal values.
	Key []byte
	// Lits are the literals in text order; Params the offsets of the '?'
	// parameter markers, in text order.
	Lits   []Lit
	Params []int32
	Flags  ShapeFlags
	// ExecVersion is the highest version of a versioned executable
	// comment /*!NNNNN ... */ (0 if none).
	ExecVersion int32
	// Items are the spans of the outermost select list's items, read by
	// SelectItems only when a plan needs them (ScanShape leaves it empty).
	Items []Span
}

// Reset empties sh, keeping its slices' capacity.
func (sh *Shape) Reset() {
	*sh = Shape{Key: sh.Key[:0], Lits: sh.Lits[:0], Params: sh.Params[:0], Items: sh.Items[:0]}
}

// Key placeholders: bytes below ' ' are whitespace to the lexer, so no
// token of a statement writes them.
const (
	keyLit   = '\x01'
	keyParam = '\x02'
)

// ScanShape scans sql into sh (reset first). It never panics and, once
// sh's slices have grown to the statement's size, never allocates. The
// shape of a text longer than 2 GiB (beyond any MySQL packet) has its
// literals cut off at 2 GiB; the planner never sees such a text.
func ScanShape(sql []byte, sh *Shape) {
	sh.Reset()
	if len(sql) > maxShapeLen {
		sql = sql[:maxShapeLen]
	}
	s := shapeScanner{sh: sh, sql: sql, l: lexer{s: sql}, nameEnd: -1}
	s.scan()
	sh.Hash = xxhash.Sum64(sh.Key)
}

const maxShapeLen = 1<<31 - 1

type shapeScanner struct {
	sh  *Shape
	sql []byte
	l   lexer
	// nameEnd is where the previous token ends if it is a name (word or
	// quoted identifier), else -1: a '.' right there qualifies the name
	// (t.5 is column 5 of t; t .5 is t and the number .5). afterDot: the
	// previous token is a '.', so a word is a name.
	nameEnd  int
	afterDot bool
}

func (s *shapeScanner) scan() {
	var t token
	gapStart, exec := 0, false
	note := s.comment
	for {
		s.l.next(&t)
		exec = walkGap(s.sql, gapStart, t.start, exec, note)
		if t.kind == tEOF {
			return
		}
		s.token(&t)
		gapStart = s.l.i
	}
}

// comment notes a comment or executable-comment marker starting at i.
func (s *shapeScanner) comment(i int, k commentEvent) {
	sql, sh := s.sql, s.sh
	switch k {
	case commentExecStart:
		end := i + 3
		if sql[i+2] == 'M' {
			sh.Flags |= ShapeMariaDBComment
			end = skipVersion(sql, i+4)
		} else {
			end = skipVersion(sql, end)
			if v := digitsValue(sql[i+3 : end]); v > sh.ExecVersion {
				sh.ExecVersion = v
			}
		}
		s.keyToken(sql[i:end])
	case commentExecEnd:
		s.keyToken(sql[i : i+2])
	default:
		if sql[i] == '/' && isHint(sql, i+2) {
			s.keyToken(sql[i:skipComment(sql, i+2)])
		}
	}
}

// isHint reports whether the comment body starting at i is an optimizer
// hint (/*+ ... */) or a shardgate hint (/* shardgate:... */).
func isHint(s []byte, i int) bool {
	if i < len(s) && s[i] == '+' {
		return true
	}
	for i < len(s) && s[i] <= ' ' {
		i++
	}
	const prefix = "SHARDGATE:"
	return len(s)-i >= len(prefix) && eqUpper(s[i:i+len(prefix)], prefix)
}

// digitsValue is the value of a run of at most 7 decimal digits.
func digitsValue(b []byte) int32 {
	var v int32
	for _, c := range b {
		v = v*10 + int32(c-'0')
	}
	return v
}

// token records the token t, which the lexer just read.
func (s *shapeScanner) token(t *token) {
	sql, sh := s.sql, s.sh
	nameEnd, afterDot := s.nameEnd, s.afterDot
	s.nameEnd, s.afterDot = -1, false
	switch t.kind {
	case tString:
		s.unterminated(t)
		s.lit(t.start, t.end, LitString)
	case tQuoted:
		s.unterminated(t)
		s.keyToken(sql[t.start:t.end])
		s.nameEnd = t.end
	case tUserVar:
		if q := t.start + 1; q < len(sql) && (sql[q] == '\'' || sql[q] == '"') {
			sh.Flags |= ShapeQuotedUserVar
			s.unterminated(t)
		} else if q < len(sql) && sql[q] == '`' {
			s.unterminated(t)
		}
		s.keyToken(sql[t.start:t.end])
	case tSysVar:
		if t.scope == scopeSession {
			sh.Flags |= ShapeSessionScope
		}
		s.keyToken(sql[t.start:t.end])
	case tWord:
		if !afterDot && s.literalWord(t) {
			return
		}
		s.word(t)
		s.nameEnd = t.end
	default:
		s.punct(t, nameEnd == t.start)
	}
}

// unterminated flags a quoted token whose closing quote is missing: its
// content then runs to the end of the text.
func (s *shapeScanner) unterminated(t *token) {
	if t.ne == len(s.sql) {
		s.sh.Flags |= ShapeUnterminated
	}
}

// literalWord records the word t as a literal if it starts one: a number,
// 0x.., 0b.., or the prefix of N'..', X'..', B'..'. The lexer resumes
// after the literal, which may extend past the word (4.2e-1).
func (s *shapeScanner) literalWord(t *token) bool {
	sql := s.sql
	c := sql[t.start]
	if c-'0' < 10 {
		end, kind := scanNumber(sql, t.start)
		if kind == 0 {
			return false
		}
		s.lit(t.start, end, kind)
		return true
	}
	if t.end != t.start+1 || t.end >= len(sql) || sql[t.end] != '\'' {
		return false
	}
	var kind LitKind
	switch c | 0x20 {
	case 'n':
		kind = LitNString
	case 'x':
		kind = LitXString
	case 'b':
		kind = LitBit
	default:
		return false
	}
	end, contentEnd := scanQuoted(sql, t.end+1, '\'', kind == LitNString)
	if contentEnd == len(sql) {
		s.sh.Flags |= ShapeUnterminated
	}
	s.lit(t.start, end, kind)
	return true
}

// scanNumber reads the number literal starting at i (a digit, or a '.'
// before one), as
// MySQL's lexer does: 0x<hex>, 0b<bits>, digits with an optional fraction
// and exponent. kind is 0 when the bytes are a name that starts with digits
// (123abc, 0x1g, 1e5x).
func scanNumber(s []byte, i int) (end int, kind LitKind) {
	n := len(s)
	if s[i] == '0' && i+1 < n && (s[i+1] == 'x' || s[i+1] == 'b') {
		j := i + 2
		for j < n && (s[i+1] == 'x' && isHexByte(s[j]) || s[i+1] == 'b' && (s[j] == '0' || s[j] == '1')) {
			j++
		}
		if j > i+2 && (j == n || !isIdent[s[j]]) {
			if s[i+1] == 'x' {
				return j, LitHex
			}
			return j, LitBit
		}
	}
	j := skipDigits(s, i)
	fraction := j < n && s[j] == '.'
	if fraction {
		j = skipDigits(s, j+1)
	}
	if j < n && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < n && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < n && s[k]-'0' < 10 {
			j = skipDigits(s, k)
		}
	}
	if !fraction && j < n && isIdent[s[j]] {
		return 0, 0
	}
	return j, LitNumber
}

func skipDigits(s []byte, i int) int {
	for i < len(s) && s[i]-'0' < 10 {
		i++
	}
	return i
}

// word records a word that is not a literal.
func (s *shapeScanner) word(t *token) {
	w := s.sql[t.start:t.end]
	if !reserved.has(w, t.h) {
		s.keyToken(w)
		return
	}
	for _, c := range w {
		s.sh.Key = append(s.sh.Key, upper(c))
	}
	s.sh.Key = append(s.sh.Key, ' ')
}

// punct records a punctuation token; afterName says whether it directly
// follows a name.
func (s *shapeScanner) punct(t *token, afterName bool) {
	sql, sh := s.sql, s.sh
	next := t.end
	switch {
	case t.c == '?':
		sh.Params = append(sh.Params, int32(t.start))
		sh.Key = append(sh.Key, keyParam, ' ')
		return
	case t.c == '.' && !afterName && next < len(sql) && sql[next]-'0' < 10:
		end, kind := scanNumber(sql, t.start) // .5: a number without integer part
		s.lit(t.start, end, kind)
		return
	case t.c == '.':
		s.afterDot = true
	case t.c == ':' && next < len(sql) && isIdent[sql[next]]:
		sh.Flags |= ShapeBindName
	}
	sh.Key = append(sh.Key, t.c, ' ')
}

// lit records the literal sql[start:end] and makes the lexer resume after it.
func (s *shapeScanner) lit(start, end int, kind LitKind) {
	s.sh.Lits = append(s.sh.Lits, Lit{Start: int32(start), End: int32(end), Kind: kind})
	s.sh.Key = append(s.sh.Key, keyLit, ' ')
	s.l.i = end
}

// keyToken appends a token's text, as written, to the key.
func (s *shapeScanner) keyToken(b []byte) {
	s.sh.Key = append(append(s.sh.Key, b...), ' ')
}

// AppendNormalized appends sql, whose shape sh is, with the i-th literal
// (1-based, in text order) replaced by :sgl<i> and the i-th '?' by
// :sgp<i>, each set off by spaces. Everything else, comments included,
// is copied as written.
func (sh *Shape) AppendNormalized(dst, sql []byte) []byte {
	return sh.appendNormalized(dst, sql, true)
}

// AppendParamsNormalized is AppendNormalized with the literals left as
// written: only the '?' markers become :sgp<i>.
func (sh *Shape) AppendParamsNormalized(dst, sql []byte) []byte {
	return sh.appendNormalized(dst, sql, false)
}

func (sh *Shape) appendNormalized(dst, sql []byte, lits bool) []byte {
	last, li, pi := 0, 0, 0
	for {
		nextLit, nextParam := len(sql), len(sql)
		if lits && li < len(sh.Lits) {
			nextLit = int(sh.Lits[li].Start)
		}
		if pi < len(sh.Params) {
			nextParam = int(sh.Params[pi])
		}
		var end int
		switch {
		case nextLit < nextParam:
			dst = append(dst, sql[last:nextLit]...)
			li++
			dst = appendPlaceholder(dst, "sgl", li)
			end = int(sh.Lits[li-1].End)
		case nextParam < len(sql):
			dst = append(dst, sql[last:nextParam]...)
			pi++
			dst = appendPlaceholder(dst, "sgp", pi)
			end = nextParam + 1
		default:
			return append(dst, sql[last:]...)
		}
		last = end
	}
}

// LitPrefix and ParamPrefix start the names of the placeholders that
// AppendNormalized writes (:sgl1, :sgp1).
const (
	LitPrefix   = "sgl"
	ParamPrefix = "sgp"
)

func appendPlaceholder(dst []byte, prefix string, i int) []byte {
	dst = append(dst, " :"...)
	dst = append(dst, prefix...)
	dst = appendUint(dst, uint64(i))
	return append(dst, ' ')
}

func appendUint(dst []byte, v uint64) []byte {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(dst, b[i:]...)
}

// AppendValue appends the value of the i-th literal (0-based) of sql:
// a string's bytes with its quotes removed, doubled quotes and backslash
// escapes resolved (as MariaDB reads them without NO_BACKSLASH_ESCAPES);
// the bytes a hex or bit literal stands for; a number's text.
func (sh *Shape) AppendValue(dst, sql []byte, i int) []byte {
	l := sh.Lits[i]
	text := sql[l.Start:l.End]
	switch l.Kind {
	case LitString:
		return appendUnescaped(dst, text)
	case LitNString:
		return appendUnescaped(dst, text[1:])
	case LitHex:
		return appendHex(dst, text[2:])
	case LitXString:
		return appendHex(dst, quoted(text[1:]))
	case LitBit:
		if text[0] == '0' {
			return appendBits(dst, text[2:])
		}
		return appendBits(dst, quoted(text[1:]))
	}
	return append(dst, text...)
}

// quoted returns the inside of a '...' token (which may lack its closing
// quote).
func quoted(b []byte) []byte {
	b = b[1:]
	if n := len(b); n > 0 && b[n-1] == '\'' {
		b = b[:n-1]
	}
	return b
}

// appendUnescaped appends the content of the quoted string q.
func appendUnescaped(dst, q []byte) []byte {
	quote := q[0]
	body := q[1:]
	if n := len(body); n > 0 && body[n-1] == quote {
		body = body[:n-1]
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == quote && i+1 < len(body) && body[i+1] == quote:
			i++
		case c == '\\' && i+1 < len(body):
			i++
			c = unescape(body[i])
			if c == '%' || c == '_' { // kept with their backslash, for LIKE
				dst = append(dst, '\\')
			}
		}
		dst = append(dst, c)
	}
	return dst
}

// unescape is the byte the escape sequence \c stands for.
func unescape(c byte) byte {
	switch c {
	case '0':
		return 0
	case 'b':
		return '\b'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'Z':
		return 0x1a
	}
	return c
}

// appendHex appends the bytes the hex digits h stand for; an odd count
// gets a leading zero, as in MySQL (0x123 is 0x0123).
func appendHex(dst, h []byte) []byte {
	if len(h)%2 == 1 {
		dst = append(dst, hexValue(h[0]))
		h = h[1:]
	}
	for i := 0; i+1 < len(h); i += 2 {
		dst = append(dst, hexValue(h[i])<<4|hexValue(h[i+1]))
	}
	return dst
}

func hexValue(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c|0x20 >= 'a' && c|0x20 <= 'f':
		return c | 0x20 - 'a' + 10
	}
	return 0
}

// appendBits appends the bytes the binary digits b stand for, big-endian,
// the first byte padded with leading zeros.
func appendBits(dst, b []byte) []byte {
	var v byte
	for i, c := range b {
		v = v<<1 | (c - '0')
		if (len(b)-i-1)%8 == 0 {
			dst = append(dst, v)
			v = 0
		}
	}
	return dst
}

// reserved holds MySQL's and MariaDB's reserved words that statements on
// tables use. A reserved word cannot be an unquoted name, so its case
// never matters; the key folds it. Other words (names, and keywords that
// may be names) stay as written, because a table name's case may matter
// to the server. The list need not be complete: a missing word only makes
// two spellings two shapes.
var reserved = newWordSet(
	"ALL", "ALTER", "AND", "AS", "ASC", "BETWEEN", "BINARY", "BY", "CASE", "CHARACTER",
	"CHECK", "COLLATE", "COLUMN", "CONSTRAINT", "CONVERT", "CREATE", "CROSS", "DEFAULT",
	"DELAYED", "DELETE", "DESC", "DISTINCT", "DISTINCTROW", "DIV", "DROP", "DUAL", "ELSE",
	"EXISTS", "FALSE", "FOR", "FORCE", "FOREIGN", "FROM", "GROUP", "HAVING",
	"HIGH_PRIORITY", "IF", "IGNORE", "IN", "INDEX", "INNER", "INSERT", "INTERVAL", "INTO",
	"IS", "JOIN", "KEY", "KEYS", "LEFT", "LIKE", "LIMIT", "LOCK", "LOW_PRIORITY", "MOD",
	"NATURAL", "NOT", "NULL", "ON", "OR", "ORDER", "OUTER", "PRIMARY", "REFERENCES",
	"REGEXP", "RENAME", "REPLACE", "RIGHT", "RLIKE", "SELECT", "SET", "SQL_BIG_RESULT",
	"SQL_CALC_FOUND_ROWS", "SQL_SMALL_RESULT", "STRAIGHT_JOIN", "TABLE", "THEN", "TO",
	"TRUE", "UNION", "UNIQUE", "UPDATE", "USE", "USING", "VALUES", "WHEN", "WHERE", "WITH",
	"XOR",
)

// wordSet is a set of upper-case words looked up by the lexer's
// case-insensitive hash (token.h): open addressing, built once.
type wordSet struct {
	slots [256]struct {
		h    uint32
		word string
	}
}

func newWordSet(words ...string) *wordSet {
	ws := new(wordSet)
	if len(words) > len(ws.slots)/2 {
		panic("router: word set too small")
	}
	for _, w := range words {
		h := hashSpan([]byte(w))
		i := h & uint32(len(ws.slots)-1)
		for ws.slots[i].word != "" {
			i = (i + 1) & uint32(len(ws.slots)-1)
		}
		ws.slots[i].h, ws.slots[i].word = h, w
	}
	return ws
}

// has reports whether b, whose hash is h, spells a word of the set in any
// ASCII case.
func (ws *wordSet) has(b []byte, h uint32) bool {
	for i := h & uint32(len(ws.slots)-1); ; i = (i + 1) & uint32(len(ws.slots)-1) {
		e := &ws.slots[i]
		if e.word == "" {
			return false
		}
		if e.h == h && eqUpper(b, e.word) {
			return true
		}
	}
}
