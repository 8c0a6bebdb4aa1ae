package sharding

import (
	"strings"
	"unicode/utf8"

	"vitess.io/vitess/go/mysql/collations/charset"
)

// Charset is the character set of a string literal's or parameter's
// bytes, which decides the string the server compares with a key column:
// a session's literals are in its character_set_client (SET NAMES
// latin1 sends 'Zoë' as 5A 6F EB), unless an introducer says otherwise
// (_latin1'…', _utf8mb4'…', N'…' for utf8mb3, _binary'…', X'…').
type Charset uint8

const (
	CharsetUTF8MB4 Charset = iota // utf8mb4: the default, what the proxy's connections speak
	CharsetUTF8MB3                // utf8mb3 (utf8, N'…'): no character beyond the BMP
	CharsetLatin1                 // MariaDB's latin1: Windows-1252, as the server maps it
	CharsetASCII                  // ascii
	// CharsetBinary: binary strings (_binary'…', X'…', BLOB parameters,
	// character_set_connection binary), compared with a string column as
	// bytes of the column's character set.
	CharsetBinary
	// CharsetOther: a character set read here only where it is ASCII; a
	// literal with other bytes matches no single key.
	CharsetOther
)

var charsetNames = [...]string{"utf8mb4", "utf8mb3", "latin1", "ascii", "binary", "other"}

func (c Charset) String() string {
	if int(c) < len(charsetNames) {
		return charsetNames[c]
	}
	return "other"
}

// LookupCharset returns the character set named as in SET NAMES, an
// introducer without its '_' or information_schema.
func LookupCharset(name string) Charset {
	switch strings.ToLower(name) {
	case "utf8mb4":
		return CharsetUTF8MB4
	case "utf8mb3", "utf8":
		return CharsetUTF8MB3
	case "latin1":
		return CharsetLatin1
	case "ascii":
		return CharsetASCII
	case "binary":
		return CharsetBinary
	}
	return CharsetOther
}

// SessionCharset is the character set a session's string literals and
// string parameters are read in, given its character_set_client and
// character_set_connection ("": the server's default, utf8mb4): the
// client's, when the server's conversion of the client's strings to the
// connection's character set loses nothing; else CharsetOther.
func SessionCharset(client, connection string) Charset {
	cl, conn := CharsetUTF8MB4, CharsetUTF8MB4
	if client != "" {
		cl = LookupCharset(client)
	}
	if connection != "" {
		conn = LookupCharset(connection)
	}
	switch {
	case conn == CharsetBinary:
		return CharsetBinary // the bytes as sent, a binary string
	case cl == conn, conn == CharsetUTF8MB4 && cl != CharsetOther:
		return cl
	case conn == CharsetUTF8MB3 && (cl == CharsetLatin1 || cl == CharsetASCII):
		return cl
	case cl == CharsetASCII && conn != CharsetOther:
		return cl
	}
	return CharsetOther
}

// StringLitIn is a string literal (unescaped) or string parameter whose
// bytes are in character set cs.
func StringLitIn(s string, cs Charset) Literal { return Literal{kind: LitString, text: s, cs: cs} }

// InCharset is l read in character set cs, as an introducer reads the
// literal after it: a string's bytes in cs, and a 0x… or b'…' literal a
// string of its bytes in cs. Other literals are unchanged.
func (l Literal) InCharset(cs Charset) Literal {
	switch l.kind {
	case LitString, LitHex:
		return Literal{kind: LitString, text: l.text, cs: cs}
	}
	return l
}

// Charset returns the character set of a string literal's bytes.
func (l Literal) Charset() Charset { return l.cs }

// utf8Text is a string literal's text as utf8mb4, converted from its
// character set as the server converts it to compare it with a column of
// a Unicode character set; a literal with bytes its character set does
// not hold (or that only a character set not read here gives meaning)
// matches no single key.
func (l Literal) utf8Text() (string, error) {
	s := l.text
	switch l.cs {
	case CharsetUTF8MB4:
		if !utf8.ValidString(s) {
			return "", inexact("not valid utf8mb4")
		}
	case CharsetUTF8MB3:
		if !utf8.ValidString(s) {
			return "", inexact("not valid utf8mb3")
		}
		for _, r := range s {
			if r > 0xFFFF {
				return "", inexact("not valid utf8mb3")
			}
		}
	case CharsetLatin1:
		if !isASCII(s) {
			b, err := charset.Convert(nil, charset.Charset_utf8mb4{}, []byte(s), charset.Charset_latin1{})
			if err != nil {
				return "", inexact("not valid latin1")
			}
			s = string(b)
		}
	default: // ASCII, and character sets not read here: their ASCII bytes
		if !isASCII(s) {
			return "", inexact("bytes of character set %s", l.cs)
		}
	}
	return s, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// Kind returns how the literal was written.
func (l Literal) Kind() LiteralKind { return l.kind }
