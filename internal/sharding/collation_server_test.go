package sharding

import (
	"context"
	"database/sql"
	"os"
	"testing"

	"github.com/shardgate/shardgate/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// TestGeneralCIMatchesServer checks the weight of every BMP code point (and
// a supplementary one) against mariadbd's WEIGHT_STRING, and that strings
// the server calls equal convert to equal keys.
func TestGeneralCIMatchesServer(t *testing.T) {
	db := testenv.Shared(t).RootDB(t)
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), "SET SESSION max_recursive_iterations = 100000"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.QueryContext(t.Context(), `WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n+1 FROM seq WHERE n < 65535)
SELECT n, CONV(HEX(WEIGHT_STRING(CONVERT(CHAR(n USING utf32) USING utf8mb4) COLLATE utf8mb4_general_ci)), 16, 10)
FROM seq WHERE n NOT BETWEEN 55296 AND 57343 UNION ALL
SELECT 128512, CONV(HEX(WEIGHT_STRING(_utf8mb4 0xF09F9880 COLLATE utf8mb4_general_ci)), 16, 10)`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	checked := 0
	for rows.Next() {
		var cp rune
		var w uint32
		if err := rows.Scan(&cp, &w); err != nil {
			t.Fatal(err)
		}
		if got := generalCIWeight(cp); got != w {
			t.Errorf("U+%04X: weight %04X, server says %04X", cp, got, w)
		}
		if cp != ' ' && w == ' ' {
			t.Errorf("U+%04X weighs as a space: trailing-space trimming would miss it", cp)
		}
		checked++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if checked != 0x10000-0x800+1 {
		t.Fatalf("checked %d code points", checked)
	}
	assertEqualityMatchesServer(t, db.QueryRowContext)
}

func assertEqualityMatchesServer(t *testing.T, queryRow func(ctx context.Context, q string, args ...any) *sql.Row) {
	pairs := [][2]string{{"Abc", "abc "}, {"abc", "abc\t"}, {"Straße", "strasse"}, {"ÀÉÎ", "aei"}, {"a", "a  "}, {"", " "}, {"😀", "😺"}, {"ǅ", "ǆ"}}
	for _, coll := range []string{"utf8mb4_general_ci", "utf8mb4_bin", "binary"} {
		c, _ := LookupCollation(coll)
		col := ColumnType{Class: ClassString, Collation: c}
		for _, p := range pairs {
			var eq bool
			q := "SELECT CONVERT(? USING utf8mb4) COLLATE " + coll + " = CONVERT(? USING utf8mb4) COLLATE " + coll
			if coll == "binary" {
				q = "SELECT CAST(? AS BINARY) = CAST(? AS BINARY)"
			}
			if err := queryRow(t.Context(), q, p[0], p[1]).Scan(&eq); err != nil {
				t.Fatal(err)
			}
			a, b := mustConvert(t, col, StringLit(p[0])), mustConvert(t, col, StringLit(p[1]))
			if (listKey(a) == listKey(b)) != eq {
				t.Errorf("%s: %q = %q is %v on the server, keys equal: %v", coll, p[0], p[1], eq, !eq)
			}
		}
	}
}
