package backend

import (
	"hash/fnv"
	"sort"
	"strings"

	"github.com/shardgate/shardgate/internal/mysql"
)

// Var is a session variable the client changed from the server default.
type Var struct {
	Name, Value string
}

// Vars is a set of session variables, sorted by name, with a fingerprint so
// that the hot path compares two states with one integer compare.
type Vars []Var

// Set records name=value, keeping the order.
func (vs *Vars) Set(name, value string) {
	i := sort.Search(len(*vs), func(i int) bool { return (*vs)[i].Name >= name })
	if i < len(*vs) && (*vs)[i].Name == name {
		(*vs)[i].Value = value
		return
	}
	*vs = append(*vs, Var{})
	copy((*vs)[i+1:], (*vs)[i:])
	(*vs)[i] = Var{Name: name, Value: value}
}

// Get returns the value of name.
func (vs Vars) Get(name string) (string, bool) {
	i := sort.Search(len(vs), func(i int) bool { return vs[i].Name >= name })
	if i < len(vs) && vs[i].Name == name {
		return vs[i].Value, true
	}
	return "", false
}

// Equal reports whether both sets hold the same variables and values.
func (vs Vars) Equal(o Vars) bool {
	if len(vs) != len(o) {
		return false
	}
	for i := range vs {
		if vs[i] != o[i] {
			return false
		}
	}
	return true
}

// Clone returns an independent copy.
func (vs Vars) Clone() Vars { return append(Vars(nil), vs...) }

// Fingerprint hashes the set; equal sets have equal fingerprints.
func (vs Vars) Fingerprint() uint64 {
	if len(vs) == 0 {
		return 0
	}
	h := fnv.New64a()
	for _, v := range vs {
		h.Write([]byte(v.Name))
		h.Write([]byte{0})
		h.Write([]byte(v.Value))
		h.Write([]byte{0})
	}
	return h.Sum64() | 1
}

// untracked are variables the proxy itself owns on every backend connection
// or that are per-statement facts rather than session settings.
var untracked = map[string]bool{
	"session_track_system_variables": true,
	"session_track_schema":           true,
	"session_track_state_change":     true,
	"session_track_transaction_info": true,
	"last_insert_id":                 true,
	"insert_id":                      true,
	"identity":                       true,
	"warning_count":                  true,
	"error_count":                    true,
	"last_gtid":                      true, // read by the router (read-your-writes), never replayed
}

// Untracked reports whether a tracked variable change is not session state
// the proxy replays.
func Untracked(name string) bool { return untracked[name] }

// ProxyOwned reports variables that configure the proxy's own view of the
// connection: a client changing them makes the connection unusable for
// others.
func ProxyOwned(name string) bool { return strings.HasPrefix(name, "session_track_") }

// AppendSync appends to b a statement that moves this connection's session
// variables to want (set what differs, return to DEFAULT what want lacks).
// It returns b unchanged when nothing differs.
func (c *Conn) AppendSync(b []byte, want Vars) []byte {
	start := len(b)
	sep := func() {
		if len(b) == start {
			b = append(b, "SET "...)
		} else {
			b = append(b, ", "...)
		}
	}
	noBackslash := c.noBackslashEscapes()
	i, j := 0, 0
	for i < len(want) || j < len(c.Vars) {
		switch {
		case j >= len(c.Vars) || (i < len(want) && want[i].Name < c.Vars[j].Name):
			sep()
			b = appendAssign(b, want[i], noBackslash)
			i++
		case i >= len(want) || c.Vars[j].Name < want[i].Name:
			sep()
			b = appendReset(b, c.Vars[j].Name, want, noBackslash)
			j++
		default:
			if want[i].Value != c.Vars[j].Value {
				sep()
				b = appendAssign(b, want[i], noBackslash)
			}
			i++
			j++
		}
	}
	// Name order puts character_set_* before collation_*, so a collation
	// wins over the character set it implies, as the client had it.
	return b
}

// handshakeVars are set by the handshake's character set, not from the
// global defaults: returning them to a fresh connection's value means
// setting the handshake's value, since DEFAULT would give the global one.
var handshakeVars = map[string]string{
	"character_set_client":     "utf8mb4",
	"character_set_connection": "utf8mb4",
	"character_set_results":    "utf8mb4",
	"collation_connection":     "utf8mb4_general_ci",
}

// appendReset returns a variable to the value a fresh backend connection
// has, given the wanted set. A collation left unset where the wanted set
// names a connection character set is that character set's default
// collation: setting the character set again gives exactly that (assigning
// the handshake collation would switch the character set back too).
func appendReset(b []byte, name string, want Vars, noBackslash bool) []byte {
	if name == "collation_connection" {
		if cs, ok := want.Get("character_set_connection"); ok {
			return appendAssign(b, Var{Name: "character_set_connection", Value: cs}, noBackslash)
		}
	}
	b = append(b, "@@session."...)
	b = append(b, name...)
	if v, ok := handshakeVars[name]; ok {
		b = append(b, " = '"...)
		b = append(b, v...)
		return append(b, '\'')
	}
	return append(b, " = DEFAULT"...)
}

func (c *Conn) noBackslashEscapes() bool {
	v, _ := c.Vars.Get("sql_mode")
	return strings.Contains(v, "NO_BACKSLASH_ESCAPES")
}

func appendAssign(b []byte, v Var, noBackslash bool) []byte {
	b = append(b, "@@session."...)
	b = append(b, v.Name...)
	b = append(b, " = "...)
	return appendValue(b, v, noBackslash)
}

// appendValue writes a variable's value as SQL: numbers bare (numeric
// variables reject quoted strings), NULL-able character sets as NULL, the
// rest quoted.
func appendValue(b []byte, v Var, noBackslash bool) []byte {
	if isNumber(v.Value) {
		return append(b, v.Value...)
	}
	if v.Value == "" && nullableVar(v.Name) {
		return append(b, "NULL"...)
	}
	b = append(b, '\'')
	for i := 0; i < len(v.Value); i++ {
		ch := v.Value[i]
		switch {
		case ch == '\'':
			b = append(b, '\'', '\'')
		case ch == '\\' && !noBackslash:
			b = append(b, '\\', '\\')
		default:
			b = append(b, ch)
		}
	}
	return append(b, '\'')
}

func nullableVar(name string) bool {
	return name == "character_set_results" || name == "character_set_client" || name == "character_set_connection"
}

func isNumber(s string) bool {
	if s == "" {
		return false
	}
	dot := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch >= '0' && ch <= '9':
		case ch == '-' && i == 0 && len(s) > 1:
		case ch == '.' && !dot && i > 0 && i < len(s)-1:
			dot = true
		default:
			return false
		}
	}
	return true
}

// AppendUseDB appends a USE statement for db.
func AppendUseDB(b []byte, db string) []byte {
	b = append(b, "USE `"...)
	b = append(b, strings.ReplaceAll(db, "`", "``")...)
	return append(b, '`')
}

// ApplyStateChanges updates the connection's record of its state from a
// session-state-change block it reported.
func (c *Conn) ApplyStateChanges(block []byte) {
	mysql.StateChanges(block, func(ch mysql.StateChange) {
		switch ch.Type {
		case mysql.TrackSystemVariables:
			name := string(ch.Name)
			if !Untracked(name) {
				c.Vars.Set(name, string(ch.Value))
			}
		case mysql.TrackSchema:
			c.DB = string(ch.Name)
		}
	})
}
