package sharding

import (
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/shardgate/shardgate/internal/testenv"
)

// collationCorpus is the strings whose equality the Vitess collations must
// decide as MariaDB does: case, accents, padding, expansions, ignorables,
// characters beyond each character set and beyond the BMP.
var collationCorpus = []string{
	"", " ", "  ", "a", "A", "a ", "a  ", "a\t", "a\u00a0", "a\x00", "\x00", "á", "Á", "à", "ä", "Ä", "ae", "AE", "Æ", "æ",
	"å", "aa", "Aa", "o", "ö", "oe", "ø", "u", "ü", "ue", "y", "ÿ", "ss", "SS", "ß", "ẞ", "Straße", "STRASSE", "strasse",
	"ch", "c", "h", "ll", "l", "ñ", "n", "ǅ", "ǆ", "Ǆ", "dž", "ŉ", "ﬁ", "fi", "ı", "i", "I", "İ", "Ω", "ω", "Ω",
	"中", "文", "中文", "日本", "가", "€", "\u0081", "\u008d", "©", "µ", "μ", "½", "1/2", "²", "2",
	"😀", "😺", "𝒜", "\U00020000", "a😀", "-", "\u2010", "'", "’", "abc", "ABC ", "Abc\u00a0", "x\u200b", "x",
}

// TestVitessCollationsMatchServer: for every collation that takes its
// weights from Vitess, two corpus strings get equal keys exactly when
// MariaDB calls them equal, a string is refused exactly when MariaDB cannot
// store it in the column's character set, and the key's bytes are
// MariaDB's WEIGHT_STRING without trailing padding.
func TestVitessCollationsMatchServer(t *testing.T) {
	db := testenv.Shared(t).RootDB(t)
	for _, name := range vitessNames {
		t.Run(name, func(t *testing.T) {
			for _, diff := range collationDiffs(t, db, name) {
				t.Error(diff)
			}
		})
	}
}

// collationDiffs loads the corpus into a column of the collation and lists
// where the server and Convert disagree.
func collationDiffs(t *testing.T, db *sql.DB, name string) []string {
	t.Helper()
	c, err := LookupCollation(name)
	if err != nil {
		t.Fatal(err)
	}
	col := ColumnType{Class: ClassString, Collation: c}
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string, args ...any) error {
		_, err := conn.ExecContext(t.Context(), q, args...)
		return err
	}
	cs := name[:strings.IndexByte(name, '_')]
	for _, q := range []string{
		"SET NAMES utf8mb4", "SET SESSION sql_mode = 'STRICT_ALL_TABLES'", "CREATE DATABASE IF NOT EXISTS colltest", "DROP TABLE IF EXISTS colltest.corpus",
		"CREATE TABLE colltest.corpus (i INT PRIMARY KEY, s VARCHAR(20) CHARACTER SET " + cs + " COLLATE " + name + ")",
	} {
		if err := exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var diffs []string
	var equalPairs, weighed int
	keys := map[int]Value{}
	for i, s := range collationCorpus {
		stored := exec("INSERT INTO colltest.corpus VALUES (?, ?)", i, s) == nil
		v, err := Convert(col, StringLit(s))
		if err != nil && !errors.Is(err, ErrInexact) {
			t.Fatal(err)
		}
		if stored != (err == nil) {
			diffs = append(diffs, fmt.Sprintf("%q: stored by the server: %v, converted: %v", s, stored, err))
		}
		if stored && err == nil {
			keys[i] = v
		}
	}
	rows, err := conn.QueryContext(t.Context(), "SELECT a.i, b.i, a.s = b.s, HEX(WEIGHT_STRING(a.s)) FROM colltest.corpus a JOIN colltest.corpus b")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var a, b int
		var eq bool
		var ws sql.NullString
		if err := rows.Scan(&a, &b, &eq, &ws); err != nil {
			t.Fatal(err)
		}
		ka, oka := keys[a]
		kb, okb := keys[b]
		if !oka || !okb {
			continue
		}
		if eq && a != b {
			equalPairs++
		}
		if (listKey(ka) == listKey(kb)) != eq {
			diffs = append(diffs, fmt.Sprintf("%q = %q is %v on the server, keys equal: %v", collationCorpus[a], collationCorpus[b], eq, !eq))
		}
		if a == b && ws.Valid {
			weighed++
			want := strings.ToUpper(hex.EncodeToString(trimPadding(mustHex(t, ws.String), vitessCollations[c-collationVitess].space)))
			if got := strings.ToUpper(hex.EncodeToString([]byte(ka.s))); got != want {
				diffs = append(diffs, fmt.Sprintf("%q: weight %s, server's WEIGHT_STRING %s", collationCorpus[a], got, ws.String))
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if equalPairs == 0 || weighed < len(keys) {
		diffs = append(diffs, fmt.Sprintf("only %d equal pairs and %d of %d weight strings compared", equalPairs, weighed, len(keys)))
	}
	return diffs
}

func mustHex(t *testing.T, s string) []byte {
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
