package router

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// shapeOf scans sql and returns its shape, normalized text and literals'
// texts.
func shapeOf(sql string) (*Shape, string, []string) {
	var sh Shape
	ScanShape([]byte(sql), &sh)
	var lits []string
	for _, l := range sh.Lits {
		lits = append(lits, sql[l.Start:l.End])
	}
	return &sh, string(sh.AppendNormalized(nil, []byte(sql))), lits
}

func TestScanShapeNormalizes(t *testing.T) {
	for _, tc := range []struct {
		sql, norm string
		lits      []string
		kinds     []LitKind
	}{
		{"SELECT * FROM t WHERE id = 42", "SELECT * FROM t WHERE id =  :sgl1 ", []string{"42"}, []LitKind{LitNumber}},
		{"select a from t where a='x' and b=\"y\"", "select a from t where a= :sgl1  and b= :sgl2 ", []string{"'x'", `"y"`}, []LitKind{LitString, LitString}},
		{"SELECT 4.2, .5, 1., 1.e3, 4.2e-1, 1E+5, 7e", "SELECT  :sgl1 ,  :sgl2 ,  :sgl3 ,  :sgl4 ,  :sgl5 ,  :sgl6 , 7e",
			[]string{"4.2", ".5", "1.", "1.e3", "4.2e-1", "1E+5"}, []LitKind{LitNumber, LitNumber, LitNumber, LitNumber, LitNumber, LitNumber}},
		{"SELECT 0x2A, X'2a', x'', 0b101, b'101', B'1', N'ü', n'a''b'", "SELECT  :sgl1 ,  :sgl2 ,  :sgl3 ,  :sgl4 ,  :sgl5 ,  :sgl6 ,  :sgl7 ,  :sgl8 ",
			[]string{"0x2A", "X'2a'", "x''", "0b101", "b'101'", "B'1'", "N'ü'", "n'a''b'"},
			[]LitKind{LitHex, LitXString, LitXString, LitBit, LitBit, LitBit, LitNString, LitNString}},
		// names that start with digits, and what only looks like a prefix
		{"SELECT 0x, 0x1g, 0X2A, 0b2, 123abc, 1e5x, x 'a', xx'a' FROM t1", "SELECT 0x, 0x1g, 0X2A, 0b2, 123abc, 1e5x, x  :sgl1 , xx :sgl2  FROM t1",
			[]string{"'a'", "'a'"}, []LitKind{LitString, LitString}},
		// qualified names: t.5 is a column, t .5 a number
		{"SELECT t.5, t .5, `t`.1e5, db.t.c FROM t", "SELECT t.5, t  :sgl1 , `t`.1e5, db.t.c FROM t", []string{".5"}, []LitKind{LitNumber}},
		// a sign is an operator, an introducer a word
		{"SELECT -1, - 2, a-3, _utf8mb4'x' COLLATE utf8mb4_bin", "SELECT - :sgl1 , -  :sgl2 , a- :sgl3 , _utf8mb4 :sgl4  COLLATE utf8mb4_bin",
			[]string{"1", "2", "3", "'x'"}, []LitKind{LitNumber, LitNumber, LitNumber, LitString}},
		// parameters
		{"INSERT INTO t VALUES (?, 'a?', ?)", "INSERT INTO t VALUES ( :sgp1 ,  :sgl1 ,  :sgp2 )", []string{"'a?'"}, []LitKind{LitString}},
		// comments are copied, literals in them are not literals;
		// executable comments are code
		{"SELECT /* 1 */ 2 -- 3\n, /*!50000 4 */ # 5\n", "SELECT /* 1 */  :sgl1  -- 3\n, /*!50000  :sgl2  */ # 5\n", []string{"2", "4"}, []LitKind{LitNumber, LitNumber}},
		// escapes and doubled quotes stay inside one literal
		{`SELECT 'it''s', 'a\'b', "c\"d", 'e\\'`, "SELECT  :sgl1 ,  :sgl2 ,  :sgl3 ,  :sgl4 ", []string{`'it''s'`, `'a\'b'`, `"c\"d"`, `'e\\'`}, []LitKind{LitString, LitString, LitString, LitString}},
		// NULL and TRUE are words; `1` a name
		{"SELECT NULL, TRUE, `1` FROM t", "SELECT NULL, TRUE, `1` FROM t", nil, nil},
		// a literal next to a word keeps apart from it
		{"SELECT 1.5abc", "SELECT  :sgl1 abc", []string{"1.5"}, []LitKind{LitNumber}},
		{"", "", nil, nil},
	} {
		sh, norm, lits := shapeOf(tc.sql)
		if norm != tc.norm {
			t.Errorf("%q: normalized %q, want %q", tc.sql, norm, tc.norm)
		}
		if fmt.Sprint(lits) != fmt.Sprint(tc.lits) {
			t.Errorf("%q: literals %q, want %q", tc.sql, lits, tc.lits)
		}
		for i, l := range sh.Lits {
			if i < len(tc.kinds) && l.Kind != tc.kinds[i] {
				t.Errorf("%q: literal %d kind %d, want %d", tc.sql, i, l.Kind, tc.kinds[i])
			}
		}
	}
}

func TestScanShapeParamsOnly(t *testing.T) {
	sql := []byte("UPDATE t SET a = 'x?' WHERE id = ? AND b = 2")
	var sh Shape
	ScanShape(sql, &sh)
	got := string(sh.AppendParamsNormalized(nil, sql))
	if want := "UPDATE t SET a = 'x?' WHERE id =  :sgp1  AND b = 2"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if len(sh.Params) != 1 || sh.Params[0] != int32(bytes.LastIndexByte(sql, '?')) {
		t.Fatalf("params %v", sh.Params)
	}
}

// TestShapeKey: statements that differ only in literal values, keyword
// case, whitespace and plain comments share a shape; anything else that
// changes what runs does not.
func TestShapeKey(t *testing.T) {
	same := [][]string{
		{"SELECT a FROM t WHERE id = 1", "select a from t where id=2", "SELECT a\nFROM t /* c */ WHERE id = 'x' -- y",
			"SeLeCt a FrOm t WhErE id = 0x2A", "SELECT a FROM t WHERE id = X'2A'", "SELECT a FROM t WHERE id = 1.5e3",
			"SELECT a FROM t WHERE id = N'x'", "SELECT a FROM t WHERE id = b'1'", "# c\nSELECT a FROM t WHERE id = \"x\""},
		{"INSERT INTO t VALUES (1,'a'),(2,'b')", "insert into t values (3, 'c'), (4, 'd')"},
		{"SELECT /*+ MAX_EXECUTION_TIME(10) */ 1", "SELECT /*+ MAX_EXECUTION_TIME(10) */ 2"},
		{"SELECT /*!50000 1 */", "SELECT /*!50000 2 */"},
	}
	for _, group := range same {
		sh0, _, _ := shapeOf(group[0])
		for _, sql := range group[1:] {
			if sh, _, _ := shapeOf(sql); sh.Hash != sh0.Hash || !bytes.Equal(sh.Key, sh0.Key) {
				t.Errorf("%q and %q: different shapes %q, %q", group[0], sql, sh0.Key, sh.Key)
			}
		}
	}
	different := []string{
		"SELECT a FROM t WHERE id = 1",
		"SELECT a FROM T WHERE id = 1",    // a name's case
		"SELECT a FROM `t` WHERE id = 1",  // quoting
		"SELECT a FROM t WHERE id = ?",    // a parameter
		"SELECT a FROM t WHERE id = -1",   // a sign
		"SELECT a FROM t WHERE id = NULL", // NULL is no literal
		"SELECT a FROM t WHERE id = TRUE", // nor TRUE
		"SELECT a FROM t WHERE id = @v",   // a variable
		"SELECT a FROM t WHERE id = @@v",  //
		"SELECT a FROM t WHERE id = 1 /*+ h */",
		"SELECT a FROM t WHERE id = 1 /* shardgate:primary */",
		"SELECT a FROM t WHERE id = 1 /* shardgate:replica */",
		"SELECT a FROM t WHERE id = /*!50000 1 */",
		"SELECT a FROM t WHERE id = /*!50001 1 */",
		"SELECT a FROM t WHERE id = /*M!100100 1 */",
		"SELECT a FROM t WHERE id = _latin1 1",
		"SELECT a FROM t WHERE id = 1; SELECT 1",
		"SELECT a FROM t WHERE `id = 1`",
		"SELECT a FROM t WHERE id = 1 1",
		"SELECT a FROM t WHERE id IN (1)",
	}
	seen := map[uint64]string{}
	keys := map[string]string{}
	for _, sql := range different {
		sh, _, _ := shapeOf(sql)
		if prev, dup := seen[sh.Hash]; dup {
			t.Errorf("%q and %q share a hash", prev, sql)
		}
		if prev, dup := keys[string(sh.Key)]; dup {
			t.Errorf("%q and %q share a key", prev, sql)
		}
		seen[sh.Hash], keys[string(sh.Key)] = sql, sql
	}
}

func TestScanShapeFlags(t *testing.T) {
	for _, tc := range []struct {
		sql     string
		flags   ShapeFlags
		version int32
	}{
		{"SELECT 1", 0, 0},
		{"SELECT /*M!100100 1 */", ShapeMariaDBComment, 0},
		{"SELECT /*Mx */ 1", 0, 0}, // a plain comment, to the classifier too
		{"SELECT /*!50700 1 */, /*!90000 2 */, /*! 3 */", 0, 90000},
		{"SELECT /*!100100 1 */", 0, 100100},
		{"SELECT '/*M!100100 1 */'", 0, 0},
		{"SELECT @'a', @\"b\"", ShapeQuotedUserVar, 0},
		{"SELECT @a, @`b`, @@global.x, @@x", 0, 0},
		{"SELECT @@session.x", ShapeSessionScope, 0},
		{"SELECT @@LOCAL.x", ShapeSessionScope, 0},
		{"SELECT :v1", ShapeBindName, 0},
		{"SELECT @a := 1, ':v'", 0, 0},
		{"SELECT 'abc", ShapeUnterminated, 0},
		{"SELECT `abc", ShapeUnterminated, 0},
		{"SELECT x'ab", ShapeUnterminated, 0},
		{"SELECT @'ab", ShapeQuotedUserVar | ShapeUnterminated, 0},
		{"SELECT 'a\\'", ShapeUnterminated, 0},
	} {
		sh, _, _ := shapeOf(tc.sql)
		if sh.Flags != tc.flags || sh.ExecVersion != tc.version {
			t.Errorf("%q: flags %b version %d, want %b %d", tc.sql, sh.Flags, sh.ExecVersion, tc.flags, tc.version)
		}
	}
}

func TestShapeAppendValue(t *testing.T) {
	sql := `SELECT 'it''s', 'a\'b\n\0\Z\%\_\q', "x""y", N'n\'', 0x0102, X'0a0B', x'123', 0b1, b'100000001', 42, 'open`
	var sh Shape
	ScanShape([]byte(sql), &sh)
	want := []string{"it's", "a'b\n\x00\x1a\\%\\_q", `x"y`, "n'", "\x01\x02", "\x0a\x0b", "\x01\x23", "\x01", "\x01\x01", "42", "open"}
	if len(sh.Lits) != len(want) {
		t.Fatalf("%d literals, want %d", len(sh.Lits), len(want))
	}
	for i, w := range want {
		if got := string(sh.AppendValue(nil, []byte(sql), i)); got != w {
			t.Errorf("literal %d %q: value %q, want %q", i, sql[sh.Lits[i].Start:sh.Lits[i].End], got, w)
		}
	}
}

// TestShapeAgreesWithClassify: the scanner reads the same tokens as the
// classifier, so a word the classifier sees as code is code to the scanner
// (it reaches the key), and one inside a string or comment is not.
func TestShapeAgreesWithClassify(t *testing.T) {
	for _, sql := range []string{
		"SELECT 'CONNECTION_ID()'", "SELECT /* CONNECTION_ID() */ 1", "SELECT /*! CONNECTION_ID() */",
		"SELECT \"\\\" CONNECTION_ID()\"", "SELECT `CONNECTION_ID()`", "SELECT -- CONNECTION_ID()\n1",
		"SELECT 1 --CONNECTION_ID()", "SELECT x'CONNECTION_ID()'", "SELECT /*M! CONNECTION_ID() */",
	} {
		flagged := Classify([]byte(sql)).Flags.Has(FlagConnectionID)
		sh, _, _ := shapeOf(sql)
		inKey := bytes.Contains(sh.Key, []byte("CONNECTION_ID ( )"))
		if flagged != inKey {
			t.Errorf("%q: classifier flags CONNECTION_ID() %v, in the shape's code %v (%q)", sql, flagged, inKey, sh.Key)
		}
	}
}

func FuzzScanShape(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM t WHERE id = 42", "INSERT INTO t VALUES (1,'a',0x2A,X'2A',b'1',N'x',-1.5e3,?)",
		"SELECT /*!50000 1 */ /*M!100100 'a' */ /*+ h */", "SELECT 'a\\", "SELECT `a", "@'", "t.5 .5 1.",
		"x'", "N'", "0x", "0b", "1e", "1e+", "SELECT :v", "\x00\xff'", "SELECT 1; SELECT 'a';",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		var sh Shape
		ScanShape([]byte(sql), &sh)
		norm := sh.AppendNormalized(nil, []byte(sql))
		for i := range sh.Lits {
			_ = sh.AppendValue(nil, []byte(sql), i)
		}
		// Replacing every literal by another of the same kind keeps the
		// normalized text and the key.
		// (A literal right after @@ or a one-letter word may lex
		// otherwise once replaced; such texts do not differ only in
		// literal values, and are not compared.)
		var b strings.Builder
		last := 0
		var spans []Lit
		for _, l := range sh.Lits {
			b.WriteString(sql[last:l.Start])
			start := b.Len()
			b.WriteString(otherLiteral(l.Kind, sql[l.Start]))
			spans = append(spans, Lit{Start: int32(start), End: int32(b.Len()), Kind: l.Kind})
			last = int(l.End)
		}
		b.WriteString(sql[last:])
		var sh2 Shape
		ScanShape([]byte(b.String()), &sh2)
		if fmt.Sprint(sh2.Lits) != fmt.Sprint(spans) {
			return
		}
		if sh2.Hash != sh.Hash || !bytes.Equal(sh2.Key, sh.Key) {
			t.Fatalf("%q and %q: different keys %q, %q", sql, b.String(), sh.Key, sh2.Key)
		}
		if norm2 := sh2.AppendNormalized(nil, []byte(b.String())); !bytes.Equal(norm, norm2) {
			t.Fatalf("%q and %q: normalized %q, %q", sql, b.String(), norm, norm2)
		}
	})
}

// otherLiteral is a literal of kind k, starting with first if a string,
// that any other such literal may be swapped for without changing how the
// text around it lexes.
func otherLiteral(k LitKind, first byte) string {
	switch k {
	case LitNumber:
		return "7.5e-3"
	case LitString:
		if first == '"' {
			return `"x""y\""`
		}
		return "'x''y\\''"
	case LitNString:
		return "N'z'"
	case LitHex:
		return "0xff"
	case LitXString:
		return "X'00'"
	}
	return "b'10'"
}

func BenchmarkScanShape(b *testing.B) {
	var ins strings.Builder
	ins.WriteString("INSERT INTO sf_order (id, user_id, amount, note, created) VALUES ")
	for i := 0; i < 100; i++ {
		if i > 0 {
			ins.WriteByte(',')
		}
		fmt.Fprintf(&ins, "(%d, %d, %d.%02d, 'note %d', '2024-01-%02d 10:00:00')", i, i*7, i, i%100, i, i%28+1)
	}
	for _, bc := range []struct{ name, sql string }{
		{"point", "SELECT id, name, email FROM sf_user WHERE id = 42"},
		{"insert100", ins.String()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			sql := []byte(bc.sql)
			var sh Shape
			ScanShape(sql, &sh)
			b.ReportAllocs()
			b.SetBytes(int64(len(sql)))
			for b.Loop() {
				ScanShape(sql, &sh)
			}
		})
	}
}
