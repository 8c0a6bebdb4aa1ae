package engine

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// DDL runs a DDL statement on the tables of a sharded schema: for each
// logical table it names (a step), its statement on every sub-table, or
// on every shard for a reference table or the schema's database, one
// part after the other; and answers as one server running the statement
// once would:
//
//   - affected rows and the info string ("Records: N  Duplicates: D
//     Warnings: W" of an ALTER that copied rows): summed over the
//     sub-tables of a sharded table (each holds some of the rows), one
//     server's for copies (reference tables, databases);
//   - the warning count: the last part's. Every part ran the same
//     statement, so a note about the definition (Note 1050 "already
//     exists" for CREATE TABLE IF NOT EXISTS, Note 1051 for DROP TABLE IF
//     EXISTS, a duplicate index) came once from each, and one server
//     would have sent it once. The last part's connection is the one the
//     session keeps for SHOW WARNINGS, so the count and the list agree.
//
// Before anything runs, every shard must have an available primary; a
// shard without one refuses the statement whole. A part that fails stops
// the statement: failing on the first part, nothing was applied and the
// client gets the server's error (sub-table names put back to the
// logical table's); after that, the error names the sub-tables (and
// shards) that applied it and those that did not, so that the operator
// can repair them (shardgate check-schema shows the differences). DDL is
// not transactional on the servers: nothing can be undone.
type DDL struct {
	What  string // the statement as errors name it: "ALTER TABLE t"
	Steps []DDLStep
	// Then runs once every part succeeded, before the answer: the
	// session learns what the statement changed (shard-key types). An
	// error from it is the client's answer instead of the OK.
	Then func() *mysql.SQLError

	step, part int // the part running, for the error of a failure
}

// DDLStep is the statement of one logical table (or of the database) in
// its parts.
type DDLStep struct {
	Logical string // the logical table (or database) it is about
	// Sum: the parts are sub-tables, each with some of the rows; else
	// each part is a full copy.
	Sum   bool
	Parts []DDLPart
}

// DDLPart is one part of a step: Part.Query (nil: the client's own
// command) on Part.Cluster, changing the sub-table or table Name.
type DDLPart struct {
	Part
	Name string
}

// Execute implements Primitive.
func (d *DDL) Execute(c Cursor, q []byte) bool {
	if e := d.unavailable(); e != nil {
		return c.Fail(e)
	}
	c.AnnotateErrors(d.failed)
	ok, done, goOn := d.run(c, q)
	c.AnnotateErrors(nil)
	if !done {
		return goOn
	}
	if d.Then != nil {
		if e := d.Then(); e != nil {
			return c.Fail(e)
		}
	}
	return c.Answer(&ok)
}

// run runs every part and returns the statement's answer; done reports
// that every part succeeded, else the client has been answered and goOn
// says whether the session goes on.
func (d *DDL) run(c Cursor, q []byte) (answer mysql.OKPacket, done, goOn bool) {
	var all mysql.OKMerge // the statement's status and session state
	var affected, warnings uint64
	var info []byte
	for d.step = range d.Steps {
		st := &d.Steps[d.step]
		var sum mysql.OKMerge
		var last mysql.OKPacket
		for d.part = range st.Parts {
			p := &st.Parts[d.part]
			conn, ok := c.Acquire(p.Cluster, false)
			if conn == nil {
				return answer, false, ok
			}
			okp, r, err := writePart(c, conn, &p.Part, q)
			if err != nil {
				return answer, false, c.Failed(conn, err, false)
			}
			if e := r.Info.Err; e != nil {
				c.RenameWarnings(logicalWarnings(p, st))
				c.Done(conn, &r.Info)
				return answer, false, c.Fail(e)
			}
			all.Add(&okp)
			sum.Add(&okp)
			last = okp
			last.Info = append(info[:0:0], okp.Info...) // okp aliases the read buffer
			if d.part < len(st.Parts)-1 {
				c.SkipWarnings() // the step's answer is its last part's
			} else {
				c.RenameWarnings(logicalWarnings(p, st))
			}
			c.Done(conn, &r.Info)
		}
		if st.Sum {
			s := sum.OK()
			affected += s.AffectedRows
			info = infoWarnings(append(info[:0], s.Info...), last.Warnings)
		} else {
			affected += last.AffectedRows
			info = last.Info
		}
		warnings += uint64(last.Warnings)
	}
	answer = all.OK()
	answer.AffectedRows, answer.LastInsertID = affected, 0
	answer.Warnings = uint16(min(warnings, 0xffff))
	answer.Info = nil
	if len(d.Steps) == 1 {
		answer.Info = info
	}
	answer.Status = c.Status() | answer.Status&mysql.StatusSessionStateChange
	return answer, true, true
}

// infoWarnings sets the warnings of an ALTER TABLE's info string
// ("Records: R  Duplicates: D  Warnings: W", the rows' numbers summed
// over the sub-tables) to the statement's warning count, which is one
// part's. Other info is returned as it is.
func infoWarnings(info []byte, warnings uint16) []byte {
	var nums [][2]int // where each number is
	for i := 0; i < len(info); {
		if info[i] < '0' || info[i] > '9' {
			i++
			continue
		}
		j := i
		for j < len(info) && info[j] >= '0' && info[j] <= '9' {
			j++
		}
		nums = append(nums, [2]int{i, j})
		i = j
	}
	if len(nums) != 3 {
		return info
	}
	w := nums[2]
	return append(append(append([]byte(nil), info[:w[0]]...), strconv.Itoa(int(warnings))...), info[w[1]:]...)
}

// unavailable refuses the statement before any part runs when a shard
// it runs on has no primary that may take statements: the statement
// would stop half applied there.
func (d *DDL) unavailable() *mysql.SQLError {
	var down []string
	seen := map[*backend.Cluster]bool{}
	for i := range d.Steps {
		for j := range d.Steps[i].Parts {
			cl := d.Steps[i].Parts[j].Cluster
			if seen[cl] {
				continue
			}
			seen[cl] = true
			if w := cl.Writer(); w == nil || !w.Available() {
				down = append(down, cl.Name)
			}
		}
	}
	if len(down) == 0 {
		return nil
	}
	return mysql.NewError(backend.ErrCodeBackendUnavailable, mysql.StateGeneral,
		"shardgate: %s was not run: shard %s has no available primary; nothing was changed", d.What, strings.Join(down, ", "))
}

// failed is the error of the part running, as the client gets it: the
// server's own when nothing was applied yet (with the sub-table's name
// put back to the logical table's), else one that says where the
// statement was applied and where not.
func (d *DDL) failed(e *mysql.SQLError) *mysql.SQLError {
	st := &d.Steps[d.step]
	p := &st.Parts[d.part]
	if d.step == 0 && d.part == 0 {
		return &mysql.SQLError{Code: e.Code, State: e.State, Message: logicalMessage(e.Message, p.Name, st.Logical)}
	}
	var applied, rest []DDLPart
	for i := range d.Steps {
		switch {
		case i < d.step:
			applied = append(applied, d.Steps[i].Parts...)
		case i == d.step:
			applied = append(applied, st.Parts[:d.part]...)
			rest = append(rest, st.Parts[d.part+1:]...)
		default:
			rest = append(rest, d.Steps[i].Parts...)
		}
	}
	msg := fmt.Sprintf("shardgate: %s was applied to %s, then failed on %s (shard %s): %s", d.What, describeParts(applied), p.Name, p.Cluster.Name, e.Message)
	if len(rest) > 0 {
		msg += "; not run on " + describeParts(rest)
	}
	msg += ". Repair the sub-tables it did not change on their shards (shardgate check-schema lists the differences)"
	return &mysql.SQLError{Code: e.Code, State: e.State, Message: msg}
}

// describeParts lists parts with their shards, a shard named once per
// run of parts on it: "t_0000, t_0001 (shard s0), t_0002 (shard s1)".
func describeParts(parts []DDLPart) string {
	var b strings.Builder
	for i := range parts {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(parts[i].Name)
		if i == len(parts)-1 || parts[i+1].Cluster != parts[i].Cluster {
			b.WriteString(" (shard " + parts[i].Cluster.Name + ")")
		}
	}
	return b.String()
}

// logicalMessage replaces the sub-table name sub, where it stands as a
// whole name in a server's message ("Table 't_0000' already exists",
// "Unknown table 'shop.t_0000'"), by the logical table's.
func logicalMessage(msg, sub, logical string) string {
	if sub == logical || sub == "" {
		return msg
	}
	var b strings.Builder
	for {
		i := strings.Index(msg, sub)
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		end := i + len(sub)
		whole := (i == 0 || !nameByte(msg[i-1])) && (end == len(msg) || !nameByte(msg[end]))
		b.WriteString(msg[:i])
		if whole {
			b.WriteString(logical)
		} else {
			b.WriteString(sub)
		}
		msg = msg[end:]
	}
}

// logicalWarnings renames part p's sub-table to its logical table in the
// messages of its warnings, or of the error it ended with, as SHOW
// WARNINGS shows them after the statement.
func logicalWarnings(p *DDLPart, st *DDLStep) func(string) string {
	return func(msg string) string { return logicalMessage(msg, p.Name, st.Logical) }
}

// nameByte reports whether c may be part of an unquoted MySQL name.
func nameByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
