package mysql

import "strconv"

// InsertKind says what an INSERT-like statement does with a row whose key
// already exists; it decides how a part's row count and affected rows
// translate into the Duplicates of MySQL's info string.
type InsertKind uint8

const (
	InsertPlain   InsertKind = iota // INSERT: a duplicate is an error
	InsertIgnore                    // INSERT IGNORE: the row is skipped
	InsertReplace                   // REPLACE: the old row is deleted
	InsertUpdate                    // INSERT ... ON DUPLICATE KEY UPDATE
)

// insertInfo is the server's info for an INSERT of several rows (MariaDB's
// ER_INSERT_INFO in English), for a statement whose parts were each one row:
// a server sends no info for a single-row INSERT.
const insertInfo = "Records: 0  Duplicates: 0  Warnings: 0"

// maxInfoNumbers bounds the numbers of an info string (LOAD DATA has four).
const maxInfoNumbers = 4

// OKMerge combines the OK packets of the parts of one statement the proxy
// spread over several backends into the OK one server would have sent for
// the whole statement. Feed every part (Add, or AddInsert for INSERT and
// REPLACE) in the order of the statement's rows, then write OK():
//
//   - AffectedRows: the parts' sum. (For a write to a reference table,
//     copied to every shard, one server's count is the answer: use that
//     part's OK instead of a merge.)
//   - LastInsertID: the first part's non-zero id. MySQL reports the first
//     id generated for the statement, so this is exact when ids come from
//     the servers and parts are fed in the order of their first row that
//     got one. With explicit ids only, MySQL reports the value of the last
//     row inserted, and when the proxy generates the ids itself it knows
//     the answer: in both cases the caller sets LastInsertID before OK().
//   - Warnings: the sum (saturating at 65535 in the packet).
//   - Status: the last part's, with SERVER_SESSION_STATE_CHANGED set exactly
//     when SessionState is kept.
//   - SessionState: the session-state-change block of the last part that
//     had one. Every part ran the same statement, so their blocks describe
//     the same change, which one server would have reported once; each
//     part's own block is in its Relay's Info for that connection's
//     bookkeeping.
//   - Info: the numbers of the parts' info strings summed position by
//     position into the first part's text ("Records: R  Duplicates: D
//     Warnings: W" for INSERT, ALTER TABLE and CREATE ... SELECT, "Rows
//     matched: M  Changed: C  Warnings: W" for UPDATE, LOAD DATA's four), so
//     a server's translated messages keep their language: a server fills
//     these messages in a fixed argument order whatever the language.
//     AddInsert makes up the numbers of a part that had no info (a
//     single-row part); when no part had one but the statement had several
//     rows, the English text is used.
type OKMerge struct {
	AffectedRows uint64
	LastInsertID uint64
	Warnings     uint64
	Status       uint16
	SessionState []byte
	Parts        int

	rows    uint64 // rows of an INSERT's parts; 0 for other statements
	text    []byte // the first part's info, numbers to be replaced by sums
	hasText bool
	sums    [maxInfoNumbers]uint64
	out     []byte
}

// Reset prepares m for a new statement, keeping its buffers.
func (m *OKMerge) Reset() {
	*m = OKMerge{SessionState: m.SessionState[:0], text: m.text[:0], out: m.out[:0]}
}

// Add feeds the OK of one part of an UPDATE, DELETE or DDL statement.
func (m *OKMerge) Add(ok *OKPacket) {
	m.add(ok)
	if len(ok.Info) > 0 {
		m.addInfo(ok.Info)
	}
}

// AddInsert feeds the OK of one part of a multi-row INSERT, INSERT IGNORE,
// INSERT ... ON DUPLICATE KEY UPDATE or REPLACE that carried rows rows.
//
// A server sends no info for a single-row INSERT (unless it warned about
// converted values), so such a part's numbers are worked out from its
// affected rows as the server counts them: INSERT IGNORE, a skipped row
// is a duplicate; REPLACE, every row deleted beyond the inserted one;
// ON DUPLICATE KEY UPDATE, a row updated (affected 2) is a duplicate. A row
// left as it was is a duplicate only on a connection with CLIENT_FOUND_ROWS,
// where it affects 1, like a row inserted: it is counted as inserted, so
// there Duplicates falls short by the number of such single-row parts.
func (m *OKMerge) AddInsert(ok *OKPacket, rows int, kind InsertKind) {
	m.add(ok)
	m.rows += uint64(rows)
	if len(ok.Info) > 0 {
		m.addInfo(ok.Info)
		return
	}
	m.sums[0] += uint64(rows)
	m.sums[1] += duplicates(ok.AffectedRows, uint64(rows), kind)
	m.sums[2] += uint64(ok.Warnings)
}

// duplicates is the Duplicates count of a part whose server sent no info.
func duplicates(affected, rows uint64, kind InsertKind) uint64 {
	switch kind {
	case InsertIgnore:
		if affected < rows {
			return rows - affected
		}
	case InsertReplace:
		if affected > rows {
			return affected - rows
		}
	case InsertUpdate:
		if rows == 1 && affected == 2 {
			return 1
		}
	}
	return 0
}

func (m *OKMerge) add(ok *OKPacket) {
	m.Parts++
	m.AffectedRows += ok.AffectedRows
	if m.LastInsertID == 0 {
		m.LastInsertID = ok.LastInsertID
	}
	m.Warnings += uint64(ok.Warnings)
	m.Status = ok.Status
	if len(ok.SessionState) > 0 {
		m.SessionState = append(m.SessionState[:0], ok.SessionState...)
	}
}

// addInfo adds the numbers of a part's info string to the sums, keeping
// the first part's text.
func (m *OKMerge) addInfo(info []byte) {
	if !m.hasText {
		m.hasText = true
		m.text = append(m.text[:0], info...)
	}
	k := 0
	for i := 0; i < len(info) && k < maxInfoNumbers; {
		if !isDigit(info[i]) {
			i++
			continue
		}
		var v uint64
		for ; i < len(info) && isDigit(info[i]); i++ {
			v = v*10 + uint64(info[i]-'0')
		}
		m.sums[k] += v
		k++
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// OK returns the combined OK packet. Its Info and SessionState alias m's
// buffers, valid until m is reset or fed again.
func (m *OKMerge) OK() OKPacket {
	ok := OKPacket{
		AffectedRows: m.AffectedRows,
		LastInsertID: m.LastInsertID,
		Warnings:     addWarnings(0, m.Warnings),
		Status:       m.Status &^ StatusSessionStateChange,
		SessionState: m.SessionState,
	}
	if len(m.SessionState) > 0 {
		ok.Status |= StatusSessionStateChange
	}
	switch {
	case m.hasText:
		m.out = m.render(m.out[:0], m.text)
		ok.Info = m.out
	case m.rows > 1:
		m.out = m.render(m.out[:0], []byte(insertInfo))
		ok.Info = m.out
	}
	return ok
}

// render appends text with its numbers replaced by the sums, in order.
func (m *OKMerge) render(b, text []byte) []byte {
	k := 0
	for i := 0; i < len(text); {
		if !isDigit(text[i]) || k == maxInfoNumbers {
			b = append(b, text[i])
			i++
			continue
		}
		for i < len(text) && isDigit(text[i]) {
			i++
		}
		b = strconv.AppendUint(b, m.sums[k], 10)
		k++
	}
	return b
}
