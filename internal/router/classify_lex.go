package router

import (
	"bytes"
	"strings"
	"sync/atomic"
)

// This file holds the allocation-free SQL lexer used by Classify and the
// keyword table it uses. The lexer does not validate SQL; it only splits the
// input into the tokens the classifier cares about and never panics, whatever
// the bytes (invalid UTF-8, unterminated strings or comments, NUL bytes...).

// tokKind is the class of a lexed token.
type tokKind uint8

const (
	tEOF     tokKind = iota
	tWord            // unquoted identifier, keyword or number: [A-Za-z0-9_$\x80-\xff]+
	tQuoted          // `quoted identifier`; ns:ne is the inside
	tString          // '...' or "..."; ns:ne is the inside
	tUserVar         // @name, @'name', @"name", @`name` or a bare @; ns:ne is the name
	tSysVar          // @@name or @@scope.name; ns:ne is the name, scope the scope
	tPunct           // any other single byte, in c
)

// System variable scopes of a tSysVar token (and of SET assignments).
const (
	scopeNone uint8 = iota
	scopeSession
	scopeGlobal // GLOBAL, PERSIST, PERSIST_ONLY
)

type token struct {
	kind   tokKind
	c      byte   // tPunct: the byte
	scope  uint8  // tSysVar: scopeNone, scopeSession or scopeGlobal
	kw     kw     // tWord: keyword id (filled in by the classifier), else kwNone
	start  int    // span of the whole token in the input
	end    int    //
	ns, ne int    // span of the name / content (see tokKind); empty for tPunct and tEOF
	h      uint32 // hash of the upper-cased bytes of s[ns:ne] (tWord, tQuoted, tSysVar)
}

func (t *token) isPunct(c byte) bool { return t.kind == tPunct && t.c == c }

// lexer walks the input. It is a small value: copying it gives an independent
// look-ahead cursor.
type lexer struct {
	s     []byte
	i     int
	exec  bool  // inside an executable comment /*! ... */ or /*M! ... */
	hints Flags // routing hints found in comments
	// hintStart:hintEnd spans the optimizer hint comments /*+ ... */ of
	// the last gap between tokens that had one, for the digest.
	hintStart, hintEnd int
}

// isIdent reports the bytes that may appear in an unquoted identifier, keyword
// or number. Every byte >= 0x80 counts, so UTF-8 identifiers stay one word.
var isIdent = func() (t [256]bool) {
	for c := 0; c < 256; c++ {
		t[c] = c >= 0x80 || c == '_' || c == '$' ||
			('0' <= c && c <= '9') || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
	}
	return t
}()

const (
	hashOffset = 2166136261
	hashPrime  = 16777619
)

func upper(c byte) byte {
	if c-'a' < 26 {
		return c - ('a' - 'A')
	}
	return c
}

func hashByte(h uint32, c byte) uint32 { return (h ^ uint32(upper(c))) * hashPrime }

// next lexes the next token into t, skipping whitespace, comments and the
// markers of executable comments (whose contents are lexed as code). It
// writes in place: tokens are never copied on the hot path.
func (l *lexer) next(t *token) {
	s := l.s
	n := len(s)
	i := l.i
skip:
	for i < n {
		c := s[i]
		switch {
		case c <= ' ': // whitespace and control characters
			i++
		case c == '#':
			i = skipLine(s, i+1)
		case c == '-' && i+1 < n && s[i+1] == '-' && (i+2 == n || s[i+2] <= ' '):
			i = skipLine(s, i+2)
		case c == '/' && i+1 < n && s[i+1] == '*':
			switch {
			case i+2 < n && s[i+2] == '!', // MySQL /*! code */, /*!50700 code */
				i+3 < n && s[i+2] == 'M' && s[i+3] == '!': // MariaDB /*M! code */
				if j, code := execComment(s, i); code {
					i, l.exec = j, true
				} else {
					i = skipComment(s, j)
				}
			default:
				l.hints |= hintIn(s, i+2)
				start := i
				i = skipComment(s, i+2)
				if start+2 < n && s[start+2] == '+' { // an optimizer hint: part of the digest
					if l.hintEnd <= l.i { // the first of this gap (l.i: where it starts)
						l.hintStart = start
					}
					l.hintEnd = i
				}
			}
		case c == '*' && l.exec && i+1 < n && s[i+1] == '/':
			i += 2
			l.exec = false
		default:
			break skip
		}
	}
	*t = token{start: i, end: i, ns: i, ne: i}
	if i >= n {
		l.i = n
		t.kind = tEOF
		return
	}

	c := s[i]
	switch {
	case isIdent[c]:
		t.kind = tWord
		t.ne, t.h = scanIdent(s, i, false)
		i = t.ne
	case c == '\'' || c == '"':
		t.kind = tString
		t.ns = i + 1
		i, t.ne = scanQuoted(s, i+1, c, true)
	case c == '`':
		t.kind = tQuoted
		t.ns = i + 1
		i, t.ne = scanQuoted(s, i+1, '`', false)
		t.h = hashSpan(s[t.ns:t.ne])
	case c == '@':
		if i+1 < n && s[i+1] == '@' {
			t.kind = tSysVar
			i = l.scanVarName(t, i+2, false)
			if i < n && s[i] == '.' {
				if sc := scopeOf(lookupKw(s[t.ns:t.ne], t.h)); sc != scopeNone {
					t.scope = sc
					i = l.scanVarName(t, i+1, false)
				}
			}
		} else {
			t.kind = tUserVar
			i = l.scanVarName(t, i+1, true)
		}
	default:
		t.kind = tPunct
		t.c = c
		i++
	}
	t.end = i
	l.i = i
}

// scanVarName lexes the name of a variable starting at i (after the @ or @@):
// a quoted name or a run of identifier characters (plus '.' for user
// variables). It fills t.ns, t.ne and t.h and returns the index after it.
func (l *lexer) scanVarName(t *token, i int, dots bool) int {
	s := l.s
	if i < len(s) {
		if q := s[i]; q == '`' || q == '\'' || q == '"' {
			t.ns = i + 1
			i, t.ne = scanQuoted(s, i+1, q, q != '`')
			t.h = hashSpan(s[t.ns:t.ne])
			return i
		}
	}
	t.ns = i
	t.ne, t.h = scanIdent(s, i, dots)
	return t.ne
}

// scanIdent returns the end of the run of identifier bytes starting at i and
// the hash of its upper-cased bytes.
func scanIdent(s []byte, i int, dots bool) (int, uint32) {
	h := uint32(hashOffset)
	for ; i < len(s); i++ {
		c := s[i]
		if !isIdent[c] && !(dots && c == '.') {
			break
		}
		h = hashByte(h, c)
	}
	return i, h
}

func hashSpan(b []byte) uint32 {
	h := uint32(hashOffset)
	for _, c := range b {
		h = hashByte(h, c)
	}
	return h
}

// scanQuoted scans a quoted string or identifier whose opening quote q was just
// before i. A doubled quote stands for itself and, if backslash is set, a
// backslash escapes the next byte. It returns the index after the closing
// quote and the end of the content (both len(s) if unterminated).
//
// It runs in linear time: each quote is searched for once, and the backslashes
// before it are skipped by a scan of the bytes in between.
func scanQuoted(s []byte, i int, q byte, backslash bool) (next, contentEnd int) {
	n := len(s)
	for i < n {
		j := bytes.IndexByte(s[i:], q)
		if j < 0 {
			break
		}
		qi := i + j // the next quote
		for backslash && i < qi {
			k := bytes.IndexByte(s[i:qi], '\\')
			if k < 0 {
				break
			}
			i += k + 2 // skip the backslash and the byte it escapes
		}
		if i > qi {
			continue // the quote was escaped
		}
		i = qi
		if i+1 < n && s[i+1] == q { // doubled quote
			i += 2
			continue
		}
		return i + 1, i
	}
	return n, n
}

// skipLine returns the index after the next '\n' at or after i, or len(s).
func skipLine(s []byte, i int) int {
	if j := bytes.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(s)
}

// hintIn reads a routing hint at the start of a comment body starting at
// i: optional '+' and spaces, then "shardgate:primary" or
// "shardgate:replica" (any case).
func hintIn(s []byte, i int) Flags {
	i, ok := shardgateHint(s, i)
	if !ok {
		return 0
	}
	w := s[i:]
	switch {
	case len(w) >= 7 && eqUpper(w[:7], "PRIMARY") && (len(w) == 7 || !isIdent[w[7]]):
		return FlagHintPrimary
	case len(w) >= 7 && eqUpper(w[:7], "REPLICA") && (len(w) == 7 || !isIdent[w[7]]):
		return FlagHintReplica
	case len(w) > len(shardHintPrefix) && eqUpper(w[:len(shardHintPrefix)], shardHintPrefix):
		return FlagHintShard
	case len(w) >= 7 && eqUpper(w[:7], "EXPLAIN") && (len(w) == 7 || !isIdent[w[7]]):
		return FlagHintExplain
	}
	return 0
}

// skipComment returns the index after the "*/" closing a comment whose body
// starts at i, or len(s).
func skipComment(s []byte, i int) int {
	for i < len(s) {
		j := bytes.IndexByte(s[i:], '*')
		if j < 0 {
			break
		}
		i += j + 1
		if i < len(s) && s[i] == '/' {
			return i + 1
		}
	}
	return len(s)
}

// serverVersion is the version of the server behind the proxy, as
// executable comments number it (10.11.19: 101119), 0 while unknown: a
// comment for a later version is a comment to that server, and so to the
// classifier (SetServerVersion).
var serverVersion atomic.Int32

// SetServerVersion makes the lexers read executable comments as a server
// of this version does (a version string as a server's greeting has it,
// "5.5.5-10.11.19-MariaDB-log", "8.0.36"): /*!NNNNN code */ and
// /*M!NNNNNN code */ for a later version are comments, their code is not
// read (mariadb-dump starts its files with "/*M!999999\- enable the
// sandbox mode */"). Until it is called, or for a version it cannot read,
// every executable comment is code.
func SetServerVersion(version string) {
	version = strings.TrimPrefix(version, "5.5.5-")
	var parts [3]int32
	for k := range parts {
		j := 0
		for j < len(version) && version[j]-'0' < 10 && j < 2 {
			j++
		}
		if j == 0 {
			serverVersion.Store(0)
			return
		}
		parts[k] = digitsValue([]byte(version[:j]))
		version = version[j:]
		if k < 2 {
			if len(version) == 0 || version[0] != '.' {
				serverVersion.Store(0)
				return
			}
			version = version[1:]
		}
	}
	serverVersion.Store(parts[0]*10000 + parts[1]*100 + parts[2])
}

// execComment reads the marker of the executable comment at i ("/*!" or
// "/*M!") and its version: where its code starts, and whether the server
// runs it (not when the version is later than serverVersion).
func execComment(s []byte, i int) (code int, runs bool) {
	at := i + 3
	if s[i+2] == 'M' {
		at++
	}
	j := skipVersion(s, at)
	if v := serverVersion.Load(); v > 0 && j > at && digitsValue(s[at:j]) > v {
		return j, false
	}
	return j, true
}

// skipVersion skips the optional server version after "/*!" or "/*M!": five
// digits, or six when followed by whitespace, "*/" or the end (MySQL 8.0.34+
// and MariaDB accept six-digit versions).
func skipVersion(s []byte, i int) int {
	d := 0
	for i+d < len(s) && d < 7 && s[i+d]-'0' < 10 {
		d++
	}
	switch {
	case d == 6 && (i+6 == len(s) || s[i+6] <= ' ' || s[i+6] == '*'):
		return i + 6
	case d >= 5:
		return i + 5
	}
	return i
}

// kw identifies the keywords and function names the classifier looks at.
type kw uint8

const (
	kwNone kw = iota

	// statements and their second words
	kwSELECT
	kwINSERT
	kwUPDATE
	kwDELETE
	kwREPLACE
	kwSET
	kwUSE
	kwBEGIN
	kwSTART
	kwTRANSACTION
	kwCOMMIT
	kwROLLBACK
	kwWORK
	kwTO
	kwSAVEPOINT
	kwRELEASE
	kwSHOW
	kwLOCK
	kwUNLOCK
	kwPREPARE
	kwEXECUTE
	kwDEALLOCATE
	kwDROP
	kwLOAD
	kwDATA
	kwXML
	kwKILL
	kwHARD
	kwSOFT
	kwCONNECTION
	kwQUERY
	kwID
	kwCREATE
	kwALTER
	kwTRUNCATE
	kwCALL
	kwDO
	kwHANDLER
	kwXA
	kwFLUSH
	kwANALYZE
	kwEXPLAIN
	kwDESCRIBE
	kwDESC
	kwWITH
	kwVALUES
	kwTABLE
	kwGRANT
	kwREVOKE
	kwRENAME
	kwOPTIMIZE
	kwCHECK
	kwREPAIR
	kwRESET
	kwPURGE
	kwCHANGE
	kwSTOP
	kwGET
	kwCURRENT
	kwSTACKED
	kwDIAGNOSTICS
	kwBACKUP
	kwNOT

	// words looked at anywhere in a statement
	kwSQL_CALC_FOUND_ROWS
	kwFOR
	kwSHARE
	kwIN
	kwINTO
	kwTEMPORARY
	kwTABLES
	kwSEQUENCE
	kwLOCAL
	kwINFILE
	kwWARNINGS
	kwERRORS
	kwNEXT
	kwPREVIOUS
	kwVALUE
	kwAS
	kwPROCEDURE
	kwFUNCTION
	kwTRIGGER
	kwEVENT
	kwPACKAGE
	kwCASE
	kwEND
	kwIF
	kwLOOP
	kwWHILE
	kwREPEAT
	kwPROCESSLIST
	kwFROM
	kwDUAL

	// SET
	kwGLOBAL
	kwPERSIST
	kwPERSIST_ONLY
	kwSESSION
	kwNAMES
	kwCHARACTER
	kwCHARSET
	kwPASSWORD
	kwROLE
	kwDEFAULT
	kwRESOURCE
	kwSTATEMENT
	kwAUTOCOMMIT

	// system variables
	kwWARNING_COUNT
	kwERROR_COUNT
	kwWAIT_TIMEOUT
	kwINTERACTIVE_TIMEOUT

	// functions
	kwGET_LOCK
	kwRELEASE_LOCK
	kwRELEASE_ALL_LOCKS
	kwIS_USED_LOCK
	kwIS_FREE_LOCK
	kwSLEEP
	kwNEXTVAL
	kwSETVAL
	kwLASTVAL
	kwMASTER_POS_WAIT
	kwSOURCE_POS_WAIT
	kwMASTER_GTID_WAIT
	kwWAIT_FOR_EXECUTED_GTID_SET
	kwWAIT_UNTIL_SQL_THREAD_AFTER_GTIDS
	kwUUID_SHORT
	kwFOUND_ROWS
	kwROW_COUNT
	kwLAST_INSERT_ID
	kwCONNECTION_ID

	// other words that may directly precede an expression (see exprKw)
	kwWHERE
	kwAND
	kwOR
	kwXOR
	kwON
	kwHAVING
	kwBY
	kwTHEN
	kwELSE
	kwELSEIF
	kwWHEN
	kwLIKE
	kwUSING
	kwRETURN
	kwIS
	kwINTERVAL
	kwDIV
	kwMOD
	kwREGEXP
	kwRLIKE
	kwBETWEEN
	kwLIMIT
	kwUNTIL
	kwDISTINCT
	kwALL
	kwANY
	kwSOME
	kwEXISTS
	kwESCAPE
	kwBINARY

	kwCount
)

// kwNames is the spelling of every kw (upper case).
var kwNames = [kwCount]string{
	kwSELECT: "SELECT", kwINSERT: "INSERT", kwUPDATE: "UPDATE", kwDELETE: "DELETE",
	kwREPLACE: "REPLACE", kwSET: "SET", kwUSE: "USE", kwBEGIN: "BEGIN", kwSTART: "START",
	kwTRANSACTION: "TRANSACTION", kwCOMMIT: "COMMIT", kwROLLBACK: "ROLLBACK", kwWORK: "WORK",
	kwTO: "TO", kwSAVEPOINT: "SAVEPOINT", kwRELEASE: "RELEASE", kwSHOW: "SHOW", kwLOCK: "LOCK",
	kwUNLOCK: "UNLOCK", kwPREPARE: "PREPARE", kwEXECUTE: "EXECUTE", kwDEALLOCATE: "DEALLOCATE",
	kwDROP: "DROP", kwLOAD: "LOAD", kwDATA: "DATA", kwXML: "XML", kwKILL: "KILL", kwHARD: "HARD",
	kwSOFT: "SOFT", kwCONNECTION: "CONNECTION", kwQUERY: "QUERY", kwID: "ID", kwCREATE: "CREATE",
	kwALTER: "ALTER", kwTRUNCATE: "TRUNCATE", kwCALL: "CALL", kwDO: "DO", kwHANDLER: "HANDLER",
	kwXA: "XA", kwFLUSH: "FLUSH", kwANALYZE: "ANALYZE", kwEXPLAIN: "EXPLAIN",
	kwDESCRIBE: "DESCRIBE", kwDESC: "DESC", kwWITH: "WITH", kwVALUES: "VALUES", kwTABLE: "TABLE",
	kwGRANT: "GRANT", kwREVOKE: "REVOKE", kwRENAME: "RENAME", kwOPTIMIZE: "OPTIMIZE",
	kwCHECK: "CHECK", kwREPAIR: "REPAIR", kwRESET: "RESET", kwPURGE: "PURGE", kwCHANGE: "CHANGE",
	kwSTOP: "STOP", kwGET: "GET", kwCURRENT: "CURRENT", kwSTACKED: "STACKED",
	kwDIAGNOSTICS: "DIAGNOSTICS", kwBACKUP: "BACKUP", kwNOT: "NOT",

	kwSQL_CALC_FOUND_ROWS: "SQL_CALC_FOUND_ROWS", kwFOR: "FOR", kwSHARE: "SHARE", kwIN: "IN",
	kwINTO: "INTO", kwTEMPORARY: "TEMPORARY", kwTABLES: "TABLES", kwSEQUENCE: "SEQUENCE",
	kwLOCAL: "LOCAL", kwINFILE: "INFILE", kwWARNINGS: "WARNINGS", kwERRORS: "ERRORS",
	kwNEXT: "NEXT", kwPREVIOUS: "PREVIOUS", kwVALUE: "VALUE", kwAS: "AS",
	kwPROCEDURE: "PROCEDURE", kwFUNCTION: "FUNCTION", kwTRIGGER: "TRIGGER", kwEVENT: "EVENT",
	kwPACKAGE: "PACKAGE", kwCASE: "CASE", kwEND: "END", kwIF: "IF", kwLOOP: "LOOP",
	kwWHILE: "WHILE", kwREPEAT: "REPEAT", kwPROCESSLIST: "PROCESSLIST", kwFROM: "FROM",
	kwDUAL: "DUAL",

	kwGLOBAL: "GLOBAL", kwPERSIST: "PERSIST", kwPERSIST_ONLY: "PERSIST_ONLY",
	kwSESSION: "SESSION", kwNAMES: "NAMES", kwCHARACTER: "CHARACTER", kwCHARSET: "CHARSET",
	kwPASSWORD: "PASSWORD", kwROLE: "ROLE", kwDEFAULT: "DEFAULT", kwRESOURCE: "RESOURCE",
	kwSTATEMENT: "STATEMENT", kwAUTOCOMMIT: "AUTOCOMMIT",

	kwWARNING_COUNT: "WARNING_COUNT", kwERROR_COUNT: "ERROR_COUNT",
	kwWAIT_TIMEOUT: "WAIT_TIMEOUT", kwINTERACTIVE_TIMEOUT: "INTERACTIVE_TIMEOUT",

	kwGET_LOCK: "GET_LOCK", kwRELEASE_LOCK: "RELEASE_LOCK", kwRELEASE_ALL_LOCKS: "RELEASE_ALL_LOCKS",
	kwIS_USED_LOCK: "IS_USED_LOCK", kwIS_FREE_LOCK: "IS_FREE_LOCK", kwSLEEP: "SLEEP",
	kwNEXTVAL: "NEXTVAL", kwSETVAL: "SETVAL", kwLASTVAL: "LASTVAL",
	kwMASTER_POS_WAIT: "MASTER_POS_WAIT", kwSOURCE_POS_WAIT: "SOURCE_POS_WAIT",
	kwMASTER_GTID_WAIT: "MASTER_GTID_WAIT", kwWAIT_FOR_EXECUTED_GTID_SET: "WAIT_FOR_EXECUTED_GTID_SET",
	kwWAIT_UNTIL_SQL_THREAD_AFTER_GTIDS: "WAIT_UNTIL_SQL_THREAD_AFTER_GTIDS",
	kwUUID_SHORT:                        "UUID_SHORT", kwFOUND_ROWS: "FOUND_ROWS", kwROW_COUNT: "ROW_COUNT",
	kwLAST_INSERT_ID: "LAST_INSERT_ID", kwCONNECTION_ID: "CONNECTION_ID",

	kwWHERE: "WHERE", kwAND: "AND", kwOR: "OR", kwXOR: "XOR", kwON: "ON", kwHAVING: "HAVING",
	kwBY: "BY", kwTHEN: "THEN", kwELSE: "ELSE", kwELSEIF: "ELSEIF", kwWHEN: "WHEN",
	kwLIKE: "LIKE", kwUSING: "USING", kwRETURN: "RETURN", kwIS: "IS", kwINTERVAL: "INTERVAL",
	kwDIV: "DIV", kwMOD: "MOD", kwREGEXP: "REGEXP", kwRLIKE: "RLIKE", kwBETWEEN: "BETWEEN",
	kwLIMIT: "LIMIT", kwUNTIL: "UNTIL", kwDISTINCT: "DISTINCT", kwALL: "ALL", kwANY: "ANY",
	kwSOME: "SOME", kwEXISTS: "EXISTS", kwESCAPE: "ESCAPE", kwBINARY: "BINARY",
}

// exprKw marks the keywords after which an adjacent '@' starts a user
// variable rather than the host part of a user@host account name (SET@a=1,
// WHERE x=1 AND@a...).
var exprKw = func() (t [kwCount]bool) {
	for _, k := range [...]kw{
		kwSET, kwSELECT, kwWHERE, kwAND, kwOR, kwXOR, kwNOT, kwON, kwHAVING, kwBY, kwTHEN,
		kwELSE, kwELSEIF, kwWHEN, kwCASE, kwDO, kwINTO, kwIN, kwLIKE, kwUSING, kwVALUES,
		kwVALUE, kwRETURN, kwIF, kwIS, kwDEFAULT, kwINTERVAL, kwDIV, kwMOD, kwREGEXP, kwRLIKE,
		kwBETWEEN, kwLIMIT, kwUNTIL, kwWHILE, kwAS, kwDISTINCT, kwALL, kwANY, kwSOME,
		kwEXISTS, kwESCAPE, kwBINARY, kwEXECUTE, kwCALL, kwKILL, kwTO, kwFOR,
	} {
		t[k] = true
	}
	return t
}()

func scopeOf(k kw) uint8 {
	switch k {
	case kwSESSION, kwLOCAL:
		return scopeSession
	case kwGLOBAL, kwPERSIST, kwPERSIST_ONLY:
		return scopeGlobal
	}
	return scopeNone
}

// The keyword hash table: open addressing, linear probing, built once at init
// and only read afterwards.
const kwTableSize = 1024 // power of two, well above 2*kwCount

type kwSlot struct {
	h uint32
	k kw
}

var (
	kwTable  [kwTableSize]kwSlot
	maxKwLen int
)

func init() {
	if int(kwCount) > kwTableSize/2 {
		panic("router: keyword table too small")
	}
	for k := kwNone + 1; k < kwCount; k++ {
		name := kwNames[k]
		if name == "" {
			panic("router: keyword without a name")
		}
		if len(name) > maxKwLen {
			maxKwLen = len(name)
		}
		h := hashSpan([]byte(name))
		i := kwSlotIndex(h)
		for kwTable[i].k != kwNone {
			i = (i + 1) & (kwTableSize - 1)
		}
		kwTable[i] = kwSlot{h: h, k: k}
	}
}

func kwSlotIndex(h uint32) uint32 { return (h ^ h>>15) & (kwTableSize - 1) }

// lookupKw returns the keyword spelled (in any ASCII case) by b, whose hash is
// h, or kwNone.
func lookupKw(b []byte, h uint32) kw {
	if len(b) == 0 || len(b) > maxKwLen {
		return kwNone
	}
	for i := kwSlotIndex(h); ; i = (i + 1) & (kwTableSize - 1) {
		e := &kwTable[i]
		if e.k == kwNone {
			return kwNone
		}
		if e.h == h && eqUpper(b, kwNames[e.k]) {
			return e.k
		}
	}
}

// eqUpper reports whether b equals the upper-case ASCII word up, ignoring
// ASCII case.
func eqUpper(b []byte, up string) bool {
	if len(b) != len(up) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if upper(b[i]) != up[i] {
			return false
		}
	}
	return true
}

// commentEvent is what walkGap reports.
type commentEvent uint8

const (
	commentPlain     commentEvent = iota // a comment starts at i
	commentExecStart                     // an executable comment starts at i
	commentExecEnd                       // an executable comment ends at i
)

// walkGap reports the comments in s[i:end], text that lexer.next skipped
// between two tokens (whitespace, comments, executable comment markers),
// with the same rules. exec says whether the gap starts inside an
// executable comment; it returns whether it ends inside one. Substitute
// names columns by the comments; the lexer itself stays free of that work.
func walkGap(s []byte, i, end int, exec bool, note func(i int, k commentEvent)) bool {
	n := end
	for i < n {
		c := s[i]
		switch {
		case c == '#':
			note(i, commentPlain)
			i = skipLine(s, i+1)
		case c == '-' && i+1 < n && s[i+1] == '-':
			note(i, commentPlain)
			i = skipLine(s, i+2)
		case c == '/' && i+2 < n && s[i+1] == '*' && (s[i+2] == '!' || s[i+2] == 'M' && i+3 < n && s[i+3] == '!'):
			j, code := execComment(s, i)
			if !code {
				note(i, commentPlain)
				i = skipComment(s, j)
				break
			}
			note(i, commentExecStart)
			i, exec = j, true
		case c == '/' && i+1 < n && s[i+1] == '*':
			note(i, commentPlain)
			i = skipComment(s, i+2)
		case c == '*' && exec && i+1 < n && s[i+1] == '/':
			note(i, commentExecEnd)
			i += 2
			exec = false
		default: // whitespace
			i++
		}
	}
	return exec
}
