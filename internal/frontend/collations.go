package frontend

import "github.com/shardgate/shardgate/internal/mysql"

// Collation is one row of the server's collation table.
type Collation struct {
	ID      byte
	Name    string
	Charset string
}

// Collations maps handshake collation ids to names, as learnt from the
// backend (information_schema.COLLATIONS), so a client's handshake character
// set becomes session variables the proxy can replay.
type Collations struct {
	byID   map[byte]Collation
	byName map[string]byte
}

// NewCollations indexes rows.
func NewCollations(rows []Collation) *Collations {
	c := &Collations{byID: make(map[byte]Collation, len(rows)), byName: make(map[string]byte, len(rows))}
	for _, r := range rows {
		c.byID[r.ID] = r
		c.byName[r.Name] = r.ID
	}
	return c
}

// Lookup returns the collation with id.
func (c *Collations) Lookup(id byte) (Collation, bool) {
	r, ok := c.byID[id]
	return r, ok
}

// ID returns the id of a collation name.
func (c *Collations) ID(name string) (byte, bool) {
	id, ok := c.byName[name]
	return id, ok
}

// ServerDefault is the collation announced in the greeting: the one backend
// connections are opened with.
func (c *Collations) ServerDefault() byte { return mysql.CollationUTF8MB4GeneralCI }
