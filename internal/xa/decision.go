package xa

import (
	"encoding/hex"
	"strings"
)

// DecisionTable holds, in the schema's database on each shard that may
// coordinate, one row per decided transaction:
//
//	gtrid -> decision ('commit' or 'abort'), created
//
// The coordinator inserts the 'commit' row in its own local transaction,
// so the decision is durable exactly when the coordinator's writes are.
// Recovery inserts an 'abort' row before it rolls a branch back: the
// primary key then refuses the coordinator's 'commit' row if it comes
// later, and waits for the coordinator's transaction if its row is
// already there, uncommitted. Either way one decision wins, in the
// coordinator's server.
const DecisionTable = "shardgate_xa_decisions"

// Decisions.
const (
	Commit = "commit"
	Abort  = "abort"
)

func tableName(schema string) string {
	return quoteIdent(schema) + "." + quoteIdent(DecisionTable)
}

// CreateTableSQL creates the decision table of schema.
func CreateTableSQL(schema string) string {
	return "CREATE TABLE IF NOT EXISTS " + tableName(schema) + " (" +
		"gtrid VARBINARY(64) NOT NULL PRIMARY KEY, " +
		"decision ENUM('commit','abort') NOT NULL, " +
		"created TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB"
}

// AppendCommitDecision appends the statement that records x's commit
// decision, to run inside the coordinator's transaction right before its
// COMMIT.
func AppendCommitDecision(b []byte, x XID) []byte {
	return appendDecision(b, x.Schema, x.Gtrid(), Commit)
}

func appendDecision(b []byte, schema, gtrid, decision string) []byte {
	b = append(b, "INSERT INTO "...)
	b = append(b, tableName(schema)...)
	b = append(b, " (gtrid, decision) VALUES (X'"...)
	b = hex.AppendEncode(b, []byte(gtrid))
	b = append(b, "', '"...)
	b = append(b, decision...)
	return append(b, "')"...)
}

func decisionQuery(schema, gtrid string) string {
	return "SELECT decision FROM " + tableName(schema) + " WHERE gtrid = X'" + hexOf(gtrid) + "'"
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func hexOf(s string) string { return hex.EncodeToString([]byte(s)) }
