package router

// StreamScanner finds what Classify's FlagMultiStatement finds, a statement
// after a ';', in a statement that arrives in pieces: one too large for the
// proxy to hold is classified by its head and streamed to the server, and
// a client that did not enable multi-statements must still not get a second
// statement through. It follows the lexer's rules (comments, executable
// comments, quotes with backslash escapes and doubled quotes) one byte at a
// time, so a piece may end anywhere.
type StreamScanner struct {
	st    scanState
	quote byte // the open quote in scanQuote / scanQuoteEnd
	exec  bool // inside an executable comment /*! ... */, whose contents are code
	semi  bool // a ';' ended a statement
	multi bool
	// digits counts the digits after "/*!": five or six of them are a
	// version, fewer are code (the lexer's skipVersion).
	digits uint8
}

type scanState uint8

const (
	scanCode         scanState = iota
	scanDash                   // code, after one '-'
	scanDashDash               // after "--": a comment if whitespace follows
	scanSlash                  // code, after '/'
	scanSlashStar              // after "/*": '!' or 'M' makes it executable
	scanSlashStarM             // after "/*M": '!' makes it executable
	scanVersion                // after "/*!" or "/*M!": skipping the version digits
	scanExecStar               // code in an executable comment, after '*'
	scanLineComment            // to the end of the line
	scanBlockComment           // to "*/"
	scanBlockStar              // in a block comment, after '*'
	scanQuote                  // in a quoted string or identifier
	scanQuoteEscape            // in a string, after a backslash
	scanQuoteEnd               // after a closing quote: a doubled one continues it
)

// Feed scans the next piece of the statement.
func (z *StreamScanner) Feed(b []byte) {
	for i := 0; i < len(b); i++ {
		z.step(b[i])
	}
}

// Multi reports whether a statement followed a ';' so far. A '-' or '/'
// at the end of the pieces fed so far, which the next piece may make a
// comment, does not count yet.
func (z *StreamScanner) Multi() bool { return z.multi }

// End reports whether the whole statement, fed completely, holds a
// statement after a ';': also when it ends in a '-', '/' or '*' that is
// code.
func (z *StreamScanner) End() bool {
	switch z.st {
	case scanDash, scanSlash, scanExecStar:
		return z.multi || z.semi
	case scanVersion:
		return z.multi || (z.semi && z.digits > 0 && z.digits < 5)
	}
	return z.multi
}

// code notes a byte of a token (not whitespace, not a comment).
func (z *StreamScanner) code() {
	if z.semi {
		z.multi = true
	}
}

func (z *StreamScanner) step(c byte) {
	switch z.st {
	case scanDash:
		if c == '-' {
			z.st = scanDashDash
			return
		}
		z.code() // the '-' was code
		z.st = scanCode
	case scanDashDash:
		if c == '\n' {
			z.st = scanCode // an empty comment
			return
		}
		if c <= ' ' {
			z.st = scanLineComment
			return
		}
		z.code() // "--x": the first '-' is code
		if c == '-' {
			return // and "--" may start again
		}
		z.st = scanCode
	case scanSlash:
		if c == '*' {
			z.st = scanSlashStar
			return
		}
		z.code() // the '/' was code
		if c == '/' {
			return // and this one may start a comment
		}
		z.st = scanCode
	case scanSlashStar:
		switch c {
		case '!':
			z.st, z.digits = scanVersion, 0
			return
		case 'M':
			z.st = scanSlashStarM
			return
		}
		z.st = scanBlockComment
		z.blockComment(c)
		return
	case scanSlashStarM:
		if c == '!' {
			z.st, z.digits = scanVersion, 0
			return
		}
		z.st = scanBlockComment // "/*M" without '!' is a comment
		z.blockComment(c)
		return
	case scanVersion:
		z.exec = true
		if c-'0' < 10 && z.digits < 6 {
			z.digits++
			return
		}
		z.st = scanCode
		if z.versionHasCode(c) {
			z.code()
		}
	case scanExecStar:
		if c == '/' {
			z.exec = false
			z.st = scanCode
			return
		}
		z.code() // the '*' was code
		z.st = scanCode
	case scanLineComment:
		if c == '\n' {
			z.st = scanCode
		}
		return
	case scanBlockComment, scanBlockStar:
		z.blockComment(c)
		return
	case scanQuote:
		switch {
		case c == z.quote:
			z.st = scanQuoteEnd
		case c == '\\' && z.quote != '`':
			z.st = scanQuoteEscape
		}
		return
	case scanQuoteEscape:
		z.st = scanQuote
		return
	case scanQuoteEnd:
		if c == z.quote {
			z.st = scanQuote // a doubled quote stands for itself
			return
		}
		z.st = scanCode
	}
	z.codeByte(c)
}

// versionHasCode reports whether digits after "/*!", ended by c, are code
// rather than a version: fewer than five, or a seventh digit, or a sixth
// not followed by whitespace or '*' (then only five are the version).
func (z *StreamScanner) versionHasCode(c byte) bool {
	switch z.digits {
	case 5:
		return false
	case 6:
		return !(c <= ' ' || c == '*') || c-'0' < 10
	}
	return z.digits > 0
}

// blockComment advances through a block comment.
func (z *StreamScanner) blockComment(c byte) {
	switch {
	case c == '*':
		z.st = scanBlockStar
	case c == '/' && z.st == scanBlockStar:
		z.st = scanCode
	default:
		z.st = scanBlockComment
	}
}

// codeByte handles a byte in code.
func (z *StreamScanner) codeByte(c byte) {
	switch {
	case c <= ' ':
	case c == ';':
		z.semi = true
	case c == '#':
		z.st = scanLineComment
	case c == '-':
		z.st = scanDash
	case c == '/':
		z.st = scanSlash
	case c == '*' && z.exec:
		z.st = scanExecStar
	case c == '\'' || c == '"' || c == '`':
		z.code()
		z.quote = c
		z.st = scanQuote
	default:
		z.code()
	}
}
