package planner

// This file parses a statement by its shape, so that one parse serves
// every statement that differs from it only in literal values.

import (
	"fmt"

	"github.com/cespare/xxhash/v2"
	"vitess.io/vitess/go/vt/sqlparser"

	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/router"
)

// Parser parses statements with Vitess's sqlparser. It is immutable and
// safe for concurrent use: one serves every session.
type Parser struct {
	p *sqlparser.Parser
}

// vitessServerVersion is the MySQL version Vitess reads /*!NNNNN */
// comments against: it runs the code of those up to 80040 and drops the
// others, while MariaDB (version 10 and up) runs all five-digit ones.
// Statements with a later version are refused (see checkFaithful).
const (
	vitessServerVersion = "8.0.40"
	vitessVersionNumber = 80040
)

// NewParser returns a Parser.
func NewParser() *Parser {
	p, err := sqlparser.New(sqlparser.Options{MySQLServerVersion: vitessServerVersion})
	if err != nil {
		panic(fmt.Sprintf("planner: vitess parser: %v", err)) // a constant version; cannot fail
	}
	return &Parser{p: p}
}

// Parsed is a statement parsed for planning.
type Parsed struct {
	// Stmt is the AST. Literal i (0-based) of the shape is the Argument
	// :sgl<i+1> in it and parameter i the Argument :sgp<i+1>, unless Exact.
	Stmt sqlparser.Statement
	// Exact: the text with its literals replaced did not parse (a number
	// in a column type or CAST(x AS DECIMAL(10,2)), DATE '…', adjacent
	// strings…), so Stmt holds the literals as written (only the '?'
	// markers are :sgp<i>). A plan built from it is good for this text
	// only, and is cached under TextKey, not under the shape.
	Exact bool
}

// Parse parses sql, whose shape is sh: the text with literals and
// parameters replaced by placeholders, or else the text as written (with
// only the parameters replaced). A text that does not parse either way
// gets the parser's error, for the caller to decide between refusing the
// statement and sending it where no parse is needed; text that no server
// would take (an unterminated string, :name) gets ER_PARSE_ERROR.
func (p *Parser) Parse(sql []byte, sh *router.Shape) (Parsed, error) {
	if sh.Flags&router.ShapeUnterminated != 0 {
		return Parsed{}, mysql.NewError(mysql.ERParse, "42000", "You have an error in your SQL syntax: unterminated quoted string or name")
	}
	if sh.Flags&router.ShapeBindName != 0 {
		return Parsed{}, mysql.NewError(mysql.ERParse, "42000", "You have an error in your SQL syntax: ':' before a name is no MySQL syntax")
	}
	if len(sh.Lits) > 0 {
		if stmt, err := p.p.ParseStrictDDL(string(sh.AppendNormalized(nil, sql))); err == nil {
			return Parsed{Stmt: stmt}, nil
		}
	}
	stmt, err := p.p.ParseStrictDDL(string(sh.AppendParamsNormalized(nil, sql)))
	if err != nil {
		return Parsed{}, fmt.Errorf("vitess sqlparser: %w", err)
	}
	return Parsed{Stmt: stmt, Exact: len(sh.Lits) > 0}, nil
}

// ParseExact parses sql with its literals as written (Parsed.Exact):
// for a statement whose plan depends on a literal's value, such as an
// ORDER BY position across shards.
func (p *Parser) ParseExact(sql []byte, sh *router.Shape) (Parsed, error) {
	stmt, err := p.p.ParseStrictDDL(string(sh.AppendParamsNormalized(nil, sql)))
	if err != nil {
		return Parsed{}, fmt.Errorf("vitess sqlparser: %w", err)
	}
	return Parsed{Stmt: stmt, Exact: true}, nil
}

// TextKey is the hash and key under which the plan of a statement parsed
// Exact is cached: those of its whole text. They never equal a shape's
// (ShapeKey): the hashes differ by a constant for equal bytes.
func TextKey(sql []byte) (hash uint64, key []byte) {
	return xxhash.Sum64(sql) ^ textHashSalt, sql
}

// ShapeKey is the hash and key under which the plan of a statement of
// shape sh is cached.
func ShapeKey(sh *router.Shape) (hash uint64, key []byte) {
	return sh.Hash, sh.Key
}

const textHashSalt = 0x9e3779b97f4a7c15
