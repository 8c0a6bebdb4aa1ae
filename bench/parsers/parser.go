package parsers

// Ref is one table reference the planner needs: the logical table and the
// alias the rest of the statement uses for it.
type Ref struct {
	Schema, Table, Alias string
}

// Facts is what the planner takes from a statement's AST: the tables (with
// aliases) and how many column-versus-literal predicates (=, IN, BETWEEN) it
// could route by. Both adapters fill it the same way so the walks compare.
type Facts struct {
	Tables []Ref
	Preds  int
}

// Parser is the common face of the two libraries, only as wide as the
// planner's needs: parse, walk, rename tables in place, re-serialise, and
// reduce a statement to its shape for a plan cache.
type Parser interface {
	Name() string
	Parse(sql string) (any, error)
	Facts(stmt any) Facts
	Rename(stmt any)
	Format(stmt any) (string, error)
	Digest(sql string) (string, error)
}

// Parsers lists the adapters in the order benchmarks interleave them.
func Parsers() []Parser { return []Parser{NewTiDB(), NewVitess()} }
