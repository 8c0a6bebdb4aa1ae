package engine

import "github.com/shardgate/shardgate/internal/mysql"

// Execute implements Primitive. (Stub until merge_io.go lands.)
func (m *Merge) Execute(c Cursor, q []byte) bool {
	return c.Fail(notYet)
}

var notYet = mysql.NewError(mysql.ERNotSupportedYet, mysql.StateSyntax, "merge not wired yet")
