package admin

import "strings"

// tokKind is the kind of a token of an admin statement.
type tokKind uint8

const (
	tokEnd    tokKind = iota
	tokWord           // keyword, name, number, address: a run of word characters
	tokQuoted         // `identifier`, without the backquotes
	tokString         // 'string' or "string", without the quotes
	tokVar            // @@name, @@scope.name
	tokSymbol         // one character: ; , ( ) . = *
)

type token struct {
	kind        tokKind
	text        string
	start       int  // offset in the statement, for messages
	spaceBefore bool // blanks or a comment separate it from the previous token
}

// is reports whether t is the keyword (any case) or symbol w.
func (t token) is(w string) bool {
	return (t.kind == tokWord || t.kind == tokSymbol) && strings.EqualFold(t.text, w)
}

// maxStatement bounds what the lexer reads: admin statements are short.
const maxStatement = 64 << 10

// lex splits an admin statement into tokens, dropping blanks and
// comments (-- to the end of the line, # to the end of the line,
// /* ... */).
func lex(s string) ([]token, error) {
	if len(s) > maxStatement {
		return nil, &ParseError{Near: s[:40], Msg: "statement too long for the admin port"}
	}
	var toks []token
	space := false
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isBlank(c):
			i++
			space = true
			continue
		case c == '#' || strings.HasPrefix(s[i:], "--") && (i+2 == len(s) || isBlank(s[i+2])):
			end := strings.IndexByte(s[i:], '\n')
			if end < 0 {
				end = len(s) - i
			}
			i += end
			space = true
			continue
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, &ParseError{Near: s[i:], Msg: "unterminated comment"}
			}
			i += end + 4
			space = true
			continue
		}
		t := token{start: i, spaceBefore: space}
		space = false
		switch {
		case c == '`' || c == '\'' || c == '"':
			text, n, ok := quoted(s[i:], c)
			if !ok {
				return nil, &ParseError{Near: s[i:], Msg: "unterminated quote"}
			}
			t.kind, t.text = tokString, text
			if c == '`' {
				t.kind = tokQuoted
			}
			i += n
		case c == '@' && strings.HasPrefix(s[i:], "@@"):
			n := 2 + wordLen(s[i+2:])
			if n == 2 {
				return nil, &ParseError{Near: s[i:], Msg: "expected a variable name after @@"}
			}
			t.kind, t.text = tokVar, s[i:i+n]
			i += n
		case wordLen(s[i:]) > 0:
			n := wordLen(s[i:])
			t.kind, t.text = tokWord, s[i:i+n]
			i += n
		default:
			t.kind, t.text = tokSymbol, s[i:i+1]
			i++
		}
		toks = append(toks, t)
	}
	return toks, nil
}

// wordLen is the length of the run of word characters s starts with:
// letters, digits and what addresses and host names hold (_ $ . : - [ ]).
// A dot between words stays in the word (main.db1:3306, @@session.x); a
// backquoted part next to one is a token of its own.
func wordLen(s string) int {
	n := 0
	for n < len(s) {
		c := s[n]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80 ||
			c == '_' || c == '$' || c == '.' || c == ':' || c == '[' || c == ']' || c == '-' && n > 0 {
			n++
			continue
		}
		break
	}
	return n
}

// quoted reads a quoted string or identifier starting at s[0] == q, with
// the quote doubled inside it (and, in strings, backslash escapes); it
// returns the text without the quotes and how much of s it spans.
func quoted(s string, q byte) (string, int, bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && q != '`' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case c == q && i+1 < len(s) && s[i+1] == q:
			i++
			b.WriteByte(q)
		case c == q:
			return b.String(), i + 1, true
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
