package difftest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Issue 20's statements: every place where a proxy evaluates or compares
// values itself, over strings of several collations (sf_member's:
// utf8mb4_unicode_ci, utf8mb4_unicode_520_ci, utf8mb4_bin, latin1), numbers,
// DECIMALs, dates and NULL, against literals and parameters that are
// mixed-case, accented, non-Latin, with trailing spaces and escapes:
// comparisons of aggregates in HAVING, in computed select items and in
// the final ORDER BY, the routing of a string shard key under its own
// collation and under an explicit other one. The merges' own keys (GROUP
// BY, DISTINCT, MIN/MAX, COUNT(DISTINCT), GROUP_CONCAT's order, LIMIT with
// ties) reach sf_member's collations through mergeTables.

// Construct names of issue 20's comparisons.
const (
	cCmpString   = "compare_string"
	cCmpNumber   = "compare_number"
	cCmpDecimal  = "compare_decimal"
	cCmpDate     = "compare_date"
	cCmpNull     = "compare_null"
	cCmpCollate  = "compare_explicit_collation"
	cCmpFunc     = "compare_function"
	cCmpList     = "compare_list_or_pattern"
	cCmpItem     = "compare_select_item"
	cCmpOrder    = "compare_order_by"
	cCmpSeveral  = "compare_several_aggregates"
	cKeyCollated = "string_key_routing"
)

var compareConstructs = []string{cCmpString, cCmpNumber, cCmpDecimal, cCmpDate, cCmpNull, cCmpCollate, cCmpFunc,
	cCmpList, cCmpItem, cCmpOrder, cCmpSeveral, cKeyCollated}

var memberColumns = []column{
	{"name", ctStr, "utf8mb4_unicode_ci"}, {"id", ctInt, ""}, {"city", ctStr, "utf8mb4_unicode_520_ci"},
	{"code", ctStr, "utf8mb4_bin"}, {"nick", ctStr, "latin1_swedish_ci"}, {"age", ctInt, ""},
	{"score", ctDec, ""}, {"joined", ctDate, ""}, {"seen", ctDatetime, ""}, {"tag", ctStr, nopadBin},
}

const memberCols = "(name, id, city, code, nick, age, score, joined, seen, tag)"

// nopadBin is sf_member.tag's collation: NO PAD, so that 'ab', 'ab ' and
// 'ab\t' are three values, which a merge must not compare as PAD SPACE
// does; no two different strings are equal under it (nothing to fold).
const nopadBin = "utf8mb4_nopad_bin"

// The strings of sf_member's columns: ties and near-ties under their
// collations (case, accents, ß and ss, trailing spaces, a tab, which
// sorts before a space under PAD SPACE), quotes and backslashes, and
// non-Latin characters; nick's are latin1's.
var (
	memberNames = []string{"Zoë", "zoe", "ZOË ", "Ünal", "unal", "UNAL", "çelik", "Çelik", "celik", "Ångström",
		"angstrom", "ANGSTROM ", "ß", "ss", "SS", "Straße", "strasse", "O'Brien", "o'brien", `back\slash`,
		`BACK\SLASH`, "walter", "Walter", "WALTER  ", "walter\t", "中文", "日本", "Ωmega", "ωmega", "😀", "😁", "naïve",
		"Naive", "résumé", "Resume", "", "a", "A "}
	memberCities = []string{"Köln", "koln", "KÖLN ", "Zürich", "zurich", "São Paulo", "sao paulo", "Ōsaka", "osaka",
		"Łódź", "lodz", "東京", "Århus", "aarhus", "Bern", "bern "}
	memberCodes = []string{"AB-1", "ab-1", "AB-1 ", "x", "X", "é", "e", "É", "z9", "Z9", "ß", "ss", `a\b`}
	memberTags  = []string{"ab", "ab ", "ab  ", "ab\t", "AB", "a", "", " ab", "é", "e", "e ", "zz"}
	memberNicks = []string{"Åsa", "åsa", "ASA", "Öz", "oz", "Ñoño", "nono", "Jürgen", "jurgen", "Ærø", "aero", "zé", "Zé", "o'neil"}
)

// domain is the strings a column holds, for literals compared with it.
func domain(c column) []string {
	switch c.name {
	case "city":
		return memberCities
	case "code":
		return memberCodes
	case "nick":
		return memberNicks
	case "tag":
		return memberTags
	case "status":
		return statuses
	case "kind":
		return []string{"click", "view", "buy", "View "}
	case "email":
		return []string{"u1@example.com", "U999@EXAMPLE.COM", "u5@example.com "}
	}
	if c.coll == "" {
		return names
	}
	return memberNames
}

func (g *Generator) memberRow(r *rand.Rand, name string, id int) []lit {
	return []lit{strLit(name), intLit(id),
		g.maybeNull(r, strLit(pick(r, memberCities))),
		g.maybeNull(r, strLit(pick(r, memberCodes))),
		g.maybeNull(r, strLit(pick(r, memberNicks))),
		g.maybeNull(r, intLit(r.IntN(40))),
		g.maybeNull(r, decimal(r, 5, 2)),
		g.maybeNull(r, dateLit(randDate(r))),
		g.maybeNull(r, datetimeLit(randDatetime(r))),
		g.maybeNull(r, strLit(pick(r, memberTags))),
	}
}

// memberRows are sf_member's initial rows: every name several times.
func (g *Generator) memberRows(r *rand.Rand) [][]lit {
	var rows [][]lit
	for id := 1; id <= 160; id++ {
		rows = append(rows, g.memberRow(r, pick(r, memberNames), id))
	}
	return rows
}

func (g *Generator) memberFilter(p string) ([]any, bool) {
	if g.r.IntN(zeroOdds) == 0 {
		return []any{p + "id > ", intLit(100000)}, true
	}
	switch g.r.IntN(5) {
	case 0:
		return []any{p + "name <> ", strLit(pick(g.r, memberNames))}, false
	case 1:
		return []any{p + "city > ", strLit(spelling(g.r, pick(g.r, memberCities)))}, false
	case 2:
		return []any{p + "code <= ", strLit(pick(g.r, memberCodes))}, false
	case 3:
		return []any{p + "score > ", decimal(g.r, 4, 1)}, false
	}
	return []any{p + "age < ", intLit(g.r.IntN(40)), " OR " + p + "seen > ", datetimeLit(randDatetime(g.r))}, false
}

// memberPoint reads sf_member by its utf8mb4_unicode_ci shard key with
// other spellings of a name: the same sub-table under the column's
// collation; under an explicit other collation ('ß' = 's' under
// utf8mb4_general_ci, not under unicode_ci) the rows may be on any.
func (g *Generator) memberPoint() Statement {
	name := func() lit { return strLit(spelling(g.r, pick(g.r, memberNames))) }
	var st Statement
	switch g.r.IntN(7) {
	case 0:
		st = sql("SELECT * FROM sf_member WHERE name = ", name()).stmt("")
	case 1:
		st = sql("SELECT id, name, city FROM sf_member WHERE name IN (", name(), ", ", name(), ", ", name(), ")").stmt("")
	case 2:
		st = sql("SELECT id, code FROM sf_member WHERE name <=> ", name(), " AND id > ", intLit(g.r.IntN(100))).stmt("")
	case 3:
		st = sql("SELECT id, name FROM sf_member WHERE name BETWEEN ", name(), " AND ", name()).stmt("")
	case 4:
		st = sql("SELECT id, name FROM sf_member WHERE name = ", name(), " COLLATE "+pick(g.r, []string{"utf8mb4_bin", "utf8mb4_general_ci", "utf8mb4_unicode_520_ci"})).stmt("")
	case 5:
		st = sql("SELECT id, nick FROM sf_member WHERE name = _utf8mb4" + quote(pick(g.r, memberNames)) + " COLLATE utf8mb4_general_ci").stmt("")
	default:
		st = sql("SELECT COUNT(*) FROM sf_member WHERE name LIKE ", strLit(likePattern(g.r, pick(g.r, memberNames), ""))).stmt("")
	}
	st.Constructs = []string{cKeyCollated}
	st.Refusable = true
	return st
}

// spelling is another spelling of s, equal to it or not under a _ci
// collation: other case, trailing spaces.
func spelling(r *rand.Rand, s string) string {
	rs := []rune(s)
	switch r.IntN(5) {
	case 0:
		return strings.ToUpper(s)
	case 1:
		return strings.ToLower(s)
	case 2:
		if len(rs) > 0 {
			return strings.ToUpper(string(rs[:1])) + string(rs[1:])
		}
	case 3:
		return s + strings.Repeat(" ", 1+r.IntN(2))
	}
	return s
}

// likePattern is a LIKE pattern from a part of s, ending with %: LIKE
// does not pad, so a pattern ending otherwise tells apart the values a
// PAD SPACE collation holds equal ('😀' and '😁 ' under
// utf8mb4_general_ci), of which MIN and MAX return either, one server's
// choice as much as another's. Under coll, a UCA collation's LIKE also
// tells apart what its = holds equal (see ucaLikeSafe).
func likePattern(r *rand.Rand, s, coll string) string {
	rs := []rune(strings.TrimSpace(s))
	if len(rs) > 2 {
		rs = rs[:2]
	}
	frag := strings.NewReplacer("%", `\%`, "_", `\_`).Replace(string(rs))
	if strings.Contains(coll, "unicode") {
		return "%" + ucaLikeSafe(frag) + "%"
	}
	return pick(r, []string{"%" + frag + "%", frag + "%", "_" + frag + "%"})
}

// ucaLikeSafe drops from a LIKE fragment the characters a UCA
// collation's LIKE, which compares character by character, tells apart
// from what its = holds equal: 'ß' = 'ss' but 'ß' NOT LIKE 's%', and
// under utf8mb4_unicode_ci every character beyond the BMP equals every
// other ('😀' = '😁') but LIKE compares them by code point. A MIN or MAX
// over such ties returns either, so the pattern keeps to characters
// that match both, and to no position, which an expansion shifts.
func ucaLikeSafe(frag string) string {
	return strings.Map(func(c rune) rune {
		if c > 0xFFFF || strings.ContainsRune("sSßẞ", c) {
			return -1
		}
		return c
	}, frag)
}

// compareLit is a value to compare with column c (or an aggregate of it):
// a spelling of one of its values, another type's spelling of it (a
// number as a string, a date as a number), or NULL.
func (g *Generator) compareLit(c column) (lit, string) {
	if g.r.IntN(12) == 0 {
		return nullLit(), cCmpNull
	}
	switch c.typ {
	case ctInt:
		n := g.r.IntN(60) - 5
		switch g.r.IntN(4) {
		case 0:
			return strLit(fmt.Sprint(n)), cCmpNumber
		case 1:
			return decLit(fmt.Sprintf("%d.5", n)), cCmpNumber
		}
		return intLit(n), cCmpNumber
	case ctDec:
		d := decimal(g.r, 4, 1+g.r.IntN(3))
		if g.r.IntN(3) == 0 {
			return strLit(d.text), cCmpDecimal
		}
		return d, cCmpDecimal
	case ctDouble:
		return floatLit(pick(g.r, floats)), cCmpNumber
	case ctDate, ctDatetime:
		t := randDatetime(g.r)
		switch g.r.IntN(4) {
		case 0: // YYYYMMDD: the server compares it as a date
			return intLit(t.Year()*10000 + int(t.Month())*100 + t.Day()), cCmpDate
		case 1:
			return strLit(t.Format("2006-01-02")), cCmpDate
		case 2:
			return dateLit(Date{t.Year(), int(t.Month()), t.Day()}), cCmpDate
		}
		return datetimeLit(t.Truncate(time.Hour)), cCmpDate
	}
	s := pick(g.r, domain(c))
	if c.coll != "latin1_swedish_ci" && g.r.IntN(3) == 0 {
		s = pick(g.r, memberNames) // another column's strings, or non-Latin ones
	}
	if g.r.IntN(3) == 0 {
		s = spelling(g.r, s)
	}
	return strLit(s), cCmpString
}

// sameTypeLit is a literal of c's own type.
func (g *Generator) sameTypeLit(c column) lit {
	switch c.typ {
	case ctInt:
		return intLit(g.r.IntN(50))
	case ctDec:
		return decimal(g.r, 3, 2)
	case ctDouble:
		return floatLit(pick(g.r, floats))
	case ctDate:
		return dateLit(randDate(g.r))
	case ctDatetime:
		return datetimeLit(randDatetime(g.r))
	}
	return strLit(pick(g.r, domain(c)))
}

// cmpOps are the comparison operators.
var cmpOps = []string{" = ", " <> ", " < ", " <= ", " > ", " >= ", " <=> ", " != "}

// extremeArg is the argument of a MIN or MAX over column c: the column,
// or for a string a function of it or it under an explicit collation;
// coll is the collation the aggregate's value compares under ("": not
// a string).
func (g *Generator) extremeArg(c column, p string) (arg, coll string, tags []string) {
	x := p + c.name
	if c.typ != ctStr || g.r.IntN(2) > 0 {
		return x, c.collation(), nil
	}
	switch g.r.IntN(3) {
	case 0:
		return pick(g.r, []string{"UPPER(", "LOWER(", "TRIM("}) + x + ")", c.collation(), []string{cCmpFunc}
	case 1, 2:
		if c.coll != "latin1_swedish_ci" {
			coll := pick(g.r, []string{"utf8mb4_bin", "utf8mb4_general_ci", "utf8mb4_unicode_ci"})
			return x + " COLLATE " + coll, coll, []string{cCmpCollate}
		}
	}
	return "CONCAT(" + x + ", '-')", c.collation(), []string{cCmpFunc}
}

// extremeCond is a condition on one MIN or MAX of a column of t: what
// the shards compute and the merge takes from the winning row.
func (g *Generator) extremeCond(t *mtable, p string) (parts []any, tags []string) {
	c := pick(g.r, t.cols)
	arg, coll, tags := g.extremeArg(c, p)
	agg := pick(g.r, []string{"MIN(", "MAX("}) + arg + ")"
	v, tag := g.compareLit(c)
	tags = append(tags, tag)
	str := c.typ == ctStr
	switch form := g.r.IntN(10); {
	case form == 0:
		op := pick(g.r, []string{" IN (", " NOT IN ("})
		w, _ := g.compareLit(c)
		x, _ := g.compareLit(c)
		return []any{agg + op, v, ", ", w, ", ", x, ")"}, append(tags, cCmpList)
	case form == 1:
		w, _ := g.compareLit(c)
		return []any{agg + " BETWEEN ", v, " AND ", w}, append(tags, cCmpList)
	case form == 2 && str:
		pat := likePattern(g.r, pick(g.r, domain(c)), coll)
		return []any{agg + pick(g.r, []string{" LIKE ", " NOT LIKE "}), strLit(pat)}, append(tags, cCmpList)
	case form == 3 && str:
		return []any{"STRCMP(" + agg + ", ", v, ") = " + pick(g.r, []string{"-1", "0", "1"})}, append(tags, cCmpFunc)
	case form == 4:
		return []any{agg + pick(g.r, []string{" IS NULL", " IS NOT NULL"})}, append(tags, cCmpNull)
	case form == 5:
		// values of the aggregate's own type: COALESCE(a DATE, '…')
		// compared with an INT converts every date to a DECIMAL with a
		// warning per evaluation, and the shards evaluate it once per
		// shard's group, one server once per group (docs/compatibility.md)
		return []any{"COALESCE(" + agg + ", ", g.sameTypeLit(c), ")" + pick(g.r, cmpOps), g.sameTypeLit(c)}, append(tags, cCmpNull)
	case form == 6 && str && c.coll != "latin1_swedish_ci":
		// under the aggregate's own collation: a MIN of 'unal' and 'Ünal'
		// under utf8mb4_unicode_ci is either, one server's as much as the
		// other, and they differ under _bin; a COLLATE in the aggregate
		// and another here are an illegal mix (1267)
		if coll == "utf8mb4_bin" && !strings.Contains(arg, " COLLATE ") {
			coll = pick(g.r, []string{"utf8mb4_general_ci", "utf8mb4_unicode_ci", "utf8mb4_bin"})
		}
		return []any{agg + pick(g.r, cmpOps) + "_utf8mb4" + quote(pick(g.r, domain(c))) + " COLLATE " + coll}, append(tags, cCmpCollate)
	case form == 7 && str:
		return []any{pick(g.r, []string{"UPPER(", "LOWER(", "CONCAT('x', "}) + agg + ")" + pick(g.r, cmpOps), v}, append(tags, cCmpFunc)
	}
	return []any{agg + pick(g.r, cmpOps), v}, tags
}

// severalCond compares two aggregates, or an aggregate expression with a
// value: numbers the merge computes, strings and dates it refuses.
func (g *Generator) severalCond(t *mtable, p string) []any {
	c := pick(g.r, t.cols)
	x := p + c.name
	switch g.r.IntN(3) {
	case 0:
		return []any{"MIN(" + x + ")" + pick(g.r, cmpOps) + "MAX(" + x + ")"}
	case 1:
		if c.typ == ctInt || c.typ == ctDec {
			v, _ := g.compareLit(c)
			return []any{"SUM(" + x + ") - MIN(" + x + ")" + pick(g.r, cmpOps), v}
		}
	}
	v, _ := g.compareLit(column{typ: ctInt})
	return []any{"COUNT(" + x + ") + COUNT(DISTINCT " + x + ")" + pick(g.r, cmpOps), v}
}

// mergeCompare is a grouped read (or one over all rows) whose HAVING,
// select items or ORDER BY compare aggregates with values: what the
// merge evaluates after combining the shards' rows.
func (g *Generator) mergeCompare() Statement {
	t := pick(g.r, mergeTables)
	if g.r.IntN(4) == 0 {
		t = mergeTables[len(mergeTables)-1] // sf_member, whose collations are several
	}
	nm := g.naming(t)
	m := newMstmt()
	var keys []groupKey
	if g.r.IntN(5) > 0 {
		keys = g.groupKeys(t, nm.prefix)
		m.tag(cGroupBy)
	}
	m.add("SELECT ")
	var spelled []string
	for i, k := range keys {
		if i > 0 {
			m.add(", ")
		}
		m.add(k.expr)
		m.foldAt(i, k.coll)
		spelled = append(spelled, k.expr)
	}
	col := len(keys)
	item := func(parts ...any) {
		if col > 0 {
			m.add(", ")
		}
		m.add(parts...)
		col++
	}
	if len(keys) == 0 || g.r.IntN(2) == 0 {
		item("COUNT(*)")
	}
	if g.r.IntN(2) == 0 {
		parts, tags := g.extremeCond(t, nm.prefix)
		m.tag(append(tags, cCmpItem)...)
		item(parts...)
	}
	if g.r.IntN(3) == 0 {
		a := g.aggregate(t, nm.prefix)
		m.tag(a.tags...)
		m.foldAt(col, a.coll)
		item(a.expr)
	}
	if col == len(keys) {
		item("COUNT(*)")
	}
	m.add(" FROM " + nm.from)
	g.where(m, t, nm.prefix)
	if len(keys) > 0 {
		m.add(" GROUP BY " + strings.Join(spelled, ", "))
	}
	if len(keys) == 0 || g.r.IntN(4) > 0 {
		m.tag(cHaving)
		m.add(" HAVING ")
		if g.r.IntN(4) == 0 {
			m.tag(cCmpSeveral)
			m.add(g.severalCond(t, nm.prefix)...)
		} else {
			parts, tags := g.extremeCond(t, nm.prefix)
			m.tag(tags...)
			m.add(parts...)
		}
		if g.r.IntN(3) == 0 {
			parts, tags := g.extremeCond(t, nm.prefix)
			m.tag(tags...)
			m.add(pick(g.r, []string{" AND ", " OR "})).add(parts...)
		}
	}
	if len(keys) == 0 {
		m.order = true // one row at most
		return m.done()
	}
	if g.r.IntN(2) == 0 {
		m.order = true
		m.tag(cOrderBy, cCmpOrder)
		m.add(" ORDER BY ")
		parts, tags := g.extremeCond(t, nm.prefix)
		m.tag(tags...)
		m.add(parts...)
		m.add(pick(g.r, []string{" DESC", "", " ASC"}))
		for _, s := range spelled {
			m.add(", " + s + pick(g.r, []string{" DESC", ""}))
		}
		if g.r.IntN(2) == 0 {
			g.limit(m, false)
		}
	}
	return m.done()
}
