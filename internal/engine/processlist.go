package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"vitess.io/vitess/go/mysql/collations"
	"vitess.io/vitess/go/sqltypes"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// Process is a client session as the list of sessions shows it: a
// snapshot the frontend takes, since it owns the sessions.
type Process struct {
	ID      uint32
	User    string
	Host    string // the client's address and port
	DB      string // the current database; "": none (NULL)
	Command string // Query, Execute, Sleep, Killed...
	// Since is when the session entered its state (its statement began,
	// or it went idle); zero: unknown, shown as no time at all.
	Since time.Time
	State string // "" when idle (the server's empty state, not NULL)
	Info  []byte // the statement running, whole; nil: none (NULL)
	// Self marks the session that asks: its state is the server's for
	// the statement asking.
	Self bool
}

// Processlist answers SHOW [FULL] PROCESSLIST, or a SELECT reading
// information_schema.PROCESSLIST, with the proxy's sessions rather than
// the backend's threads: their ids are the connection ids clients know
// (CONNECTION_ID(), KILL). The column definitions are the server's: the
// statement runs on Cluster as Probe (SHOW as written, a SELECT with
// LIMIT 0), so names, aliases, types, lengths and character sets are
// what the server gives this session, and the server's own errors
// (unknown column, no such table) come first. The rows are the
// sessions', filtered, ordered and cut as the plan says.
type Processlist struct {
	Cluster *backend.Cluster
	Probe   []byte // a COM_QUERY packet
	// Show: SHOW PROCESSLIST, whose rows go by id and whose Info is cut
	// at 100 bytes as the server cuts it, unless Full. Otherwise a SELECT,
	// whose rows go by id, newest first, unless ordered, with INFO cut at
	// 65,535 bytes as the server's information_schema cuts it.
	Show, Full bool
	// Where keeps the rows for which it holds; it reads the row of every
	// column (ProcessField's numbering). nil: every row.
	Where *ProcessCond
	// Order sorts the rows (ORDER BY), after Where.
	Order []ProcessOrder
	// Limit and Offset cut the ordered rows (HasLimit: LIMIT given).
	HasLimit      bool
	Limit, Offset uint64
	// Refusal, when set, is the answer once the probe has passed: a
	// statement the proxy cannot answer exactly, refused after the
	// server's own errors had their turn.
	Refusal *mysql.SQLError
	// Sessions lists the sessions the client may see, taken while the
	// answer is made (after the probe).
	Sessions func() []Process
}

// ProcessOrder is a key of ORDER BY: a column of information_schema
// .PROCESSLIST (Field, in ProcessFields), or a position in the select
// list (Pos, 1-based, Field -1), which the probe's columns resolve.
type ProcessOrder struct {
	Field int
	Pos   int
	Desc  bool
}

// processField is a column of information_schema.PROCESSLIST.
type processField struct {
	name string
	typ  sqltypes.Type
	text bool // utf8mb3_general_ci, as information_schema's strings
}

// Fields of information_schema.PROCESSLIST, in MariaDB 10.11's order.
const (
	pfID = iota
	pfUser
	pfHost
	pfDB
	pfCommand
	pfTime
	pfState
	pfInfo
	pfTimeMS
	pfStage
	pfMaxStage
	pfProgress
	pfMemoryUsed
	pfMaxMemoryUsed
	pfExaminedRows
	pfQueryID
	pfInfoBinary
	pfTID
	pfCount
)

var processFields = [pfCount]processField{
	pfID:            {"ID", sqltypes.Int64, false},
	pfUser:          {"USER", sqltypes.VarChar, true},
	pfHost:          {"HOST", sqltypes.VarChar, true},
	pfDB:            {"DB", sqltypes.VarChar, true},
	pfCommand:       {"COMMAND", sqltypes.VarChar, true},
	pfTime:          {"TIME", sqltypes.Int32, false},
	pfState:         {"STATE", sqltypes.VarChar, true},
	pfInfo:          {"INFO", sqltypes.Text, true},
	pfTimeMS:        {"TIME_MS", sqltypes.Decimal, false},
	pfStage:         {"STAGE", sqltypes.Int8, false},
	pfMaxStage:      {"MAX_STAGE", sqltypes.Int8, false},
	pfProgress:      {"PROGRESS", sqltypes.Decimal, false},
	pfMemoryUsed:    {"MEMORY_USED", sqltypes.Int64, false},
	pfMaxMemoryUsed: {"MAX_MEMORY_USED", sqltypes.Int64, false},
	pfExaminedRows:  {"EXAMINED_ROWS", sqltypes.Int32, false},
	pfQueryID:       {"QUERY_ID", sqltypes.Int64, false},
	pfInfoBinary:    {"INFO_BINARY", sqltypes.Blob, false},
	pfTID:           {"TID", sqltypes.Int64, false},
}

// ProcessField looks a column of information_schema.PROCESSLIST up by
// name (any case): its index in the rows Where reads, and its type and
// collation for evalengine. ok is false for a column the proxy does not
// fill (a later server's).
func ProcessField(name string) (i int, typ sqltypes.Type, coll collations.ID, ok bool) {
	for i, f := range processFields {
		if strings.EqualFold(f.name, name) {
			coll = collations.CollationBinaryID
			if f.text {
				coll = collations.CollationUtf8mb3ID
			}
			return i, f.typ, coll, true
		}
	}
	return 0, 0, 0, false
}

// showColumns are SHOW PROCESSLIST's columns (MariaDB's; MySQL's lack
// Progress), as the fields they show.
var showColumns = map[string]int{"Id": pfID, "User": pfUser, "Host": pfHost, "db": pfDB,
	"Command": pfCommand, "Time": pfTime, "State": pfState, "Info": pfInfo, "Progress": pfProgress}

// The server's cuts of a statement's text (bytes, as the server cuts
// it, even within a character).
const (
	showInfoMax = 100   // SHOW PROCESSLIST
	infoMax     = 65535 // information_schema.PROCESSLIST
)

// The server's own state for the statement that reads the list.
const (
	selfShowState  = "starting"
	selfTableState = "Filling schema table"
)

// Execute implements Primitive.
func (pl *Processlist) Execute(c Cursor, q []byte) bool {
	m := Metadata{Parts: []Part{{Cluster: pl.Cluster, Query: pl.Probe}}, Build: pl.build}
	return m.Execute(c, q)
}

func (pl *Processlist) build(results []*mysql.ResultSet) (*mysql.ResultSet, error) {
	if pl.Refusal != nil {
		return nil, pl.Refusal
	}
	probe := results[0]
	return pl.Answer(probe.Columns, probe.Warnings, pl.Sessions(), time.Now())
}

// Answer makes the result set: the column definitions defs (the
// probe's, with its warnings) and the rows of procs, as at now.
func (pl *Processlist) Answer(defs [][]byte, warnings uint16, procs []Process, now time.Time) (*mysql.ResultSet, error) {
	cols, err := pl.columns(defs)
	if err != nil {
		return nil, err
	}
	rows := make([][]sqltypes.Value, 0, len(procs))
	for i := range procs {
		rows = append(rows, pl.values(&procs[i], now))
	}
	if pl.Where != nil {
		kept := rows[:0]
		for _, r := range rows {
			if pl.Where.Holds(r) {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	if err := pl.sort(rows, cols); err != nil {
		return nil, err
	}
	if pl.HasLimit {
		off := min(pl.Offset, uint64(len(rows)))
		rows = rows[off:]
		rows = rows[:min(pl.Limit, uint64(len(rows)))]
	}
	rs := &mysql.ResultSet{Columns: defs, Warnings: warnings, Rows: make([][][]byte, len(rows))}
	for i, r := range rows {
		out := make([][]byte, len(cols))
		for j, col := range cols {
			out[j] = pl.text(r, col)
		}
		rs.Rows[i] = out
	}
	return rs, nil
}

// processColumn is what a result column shows: a field, and for SHOW's Info
// how much of the statement.
type processColumn struct {
	field   int
	showCut bool
}

// columns reads which field each of the probe's columns shows: SHOW's
// by name, a SELECT's by the column's original name (a plain column of
// information_schema.PROCESSLIST: the planner let nothing else through).
func (pl *Processlist) columns(defs [][]byte) ([]processColumn, error) {
	cols := make([]processColumn, len(defs))
	for i, def := range defs {
		d, ok := mysql.ParseColumnDef(def)
		if !ok {
			return nil, fmt.Errorf("processlist: column %d: %w", i, mysql.ErrMalformed)
		}
		f, known := -1, false
		if pl.Show {
			f, known = showColumns[string(d.Name)]
			cols[i].showCut = f == pfInfo && !pl.Full
		} else if strings.EqualFold(string(d.OrgTable), "PROCESSLIST") {
			f, _, _, known = ProcessField(string(d.OrgName))
		}
		if !known {
			return nil, mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax,
				"This version of shardgate doesn't yet support 'the column %s of the list of sessions (information_schema.PROCESSLIST)'", d.Name)
		}
		cols[i].field = f
	}
	return cols, nil
}

// values returns p's row: every field, typed for Where and ORDER BY.
func (pl *Processlist) values(p *Process, now time.Time) []sqltypes.Value {
	var d time.Duration
	if !p.Since.IsZero() && now.After(p.Since) {
		d = now.Sub(p.Since)
	}
	state := p.State
	if p.Self {
		state = selfTableState
		if pl.Show {
			state = selfShowState
		}
	}
	row := make([]sqltypes.Value, pfCount)
	str := func(s string) sqltypes.Value { return sqltypes.MakeTrusted(sqltypes.VarChar, nonNil([]byte(s))) }
	row[pfID] = sqltypes.NewInt64(int64(p.ID))
	row[pfUser] = str(p.User)
	row[pfHost] = str(p.Host)
	row[pfDB] = sqltypes.NULL
	if p.DB != "" {
		row[pfDB] = str(p.DB)
	}
	row[pfCommand] = str(p.Command)
	row[pfTime] = sqltypes.NewInt32(int32(min(d/time.Second, 1<<31-1)))
	row[pfState] = str(state)
	row[pfInfo], row[pfInfoBinary] = sqltypes.NULL, sqltypes.NULL
	if p.Info != nil {
		info := p.Info
		if !pl.Show || !pl.Full {
			info = info[:min(len(info), infoMax)]
		}
		row[pfInfo] = sqltypes.MakeTrusted(sqltypes.Text, nonNil(info))
		row[pfInfoBinary] = sqltypes.MakeTrusted(sqltypes.Blob, nonNil(info[:min(len(info), infoMax)]))
	}
	us := d.Microseconds()
	row[pfTimeMS] = sqltypes.MakeTrusted(sqltypes.Decimal, fmt.Appendf(nil, "%d.%03d", us/1000, us%1000))
	zero, zeroDec := sqltypes.NewInt64(0), sqltypes.MakeTrusted(sqltypes.Decimal, []byte("0.000"))
	row[pfStage], row[pfMaxStage] = sqltypes.NewInt8(0), sqltypes.NewInt8(0)
	row[pfProgress] = zeroDec
	row[pfMemoryUsed], row[pfMaxMemoryUsed] = zero, zero
	row[pfExaminedRows] = sqltypes.NewInt32(0)
	row[pfQueryID], row[pfTID] = zero, zero
	return row
}

// text is the value of column col in row r as a text row carries it
// (nil: NULL).
func (pl *Processlist) text(r []sqltypes.Value, col processColumn) []byte {
	v := r[col.field]
	if v.IsNull() {
		return nil
	}
	b := nonNil(v.Raw())
	if col.showCut {
		b = b[:min(len(b), showInfoMax)]
	}
	return b
}

// nonNil returns b, or an empty slice for nil: an empty string is not
// NULL in a result row.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// compareNullsFirst orders values as ORDER BY does: NULL first.
func compareNullsFirst(a, b PValue) int {
	switch {
	case a.Null && b.Null:
		return 0
	case a.Null:
		return -1
	case b.Null:
		return 1
	}
	return comparePValues(a, b)
}

// sort orders rows as the server lists them (SHOW by id, a SELECT by id,
// newest first), then by Order, stably.
func (pl *Processlist) sort(rows [][]sqltypes.Value, cols []processColumn) error {
	slices.SortFunc(rows, func(a, b []sqltypes.Value) int {
		x, _ := a[pfID].ToInt64()
		y, _ := b[pfID].ToInt64()
		if pl.Show {
			return cmp.Compare(x, y)
		}
		return cmp.Compare(y, x)
	})
	if len(pl.Order) == 0 {
		return nil
	}
	fields := make([]int, len(pl.Order))
	for i, o := range pl.Order {
		f := o.Field
		if f < 0 {
			if o.Pos < 1 || o.Pos > len(cols) {
				return mysql.NewError(1054, "42S22", "Unknown column '%d' in 'order clause'", o.Pos)
			}
			f = cols[o.Pos-1].field
		}
		fields[i] = f
	}
	slices.SortStableFunc(rows, func(a, b []sqltypes.Value) int {
		for i, f := range fields {
			c := compareNullsFirst(fieldValue(f, a[f]), fieldValue(f, b[f]))
			if pl.Order[i].Desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
	return nil
}
