package router

import (
	"bytes"
	"testing"
)

// FuzzClassify checks that Classify never panics, is deterministic, does not
// modify its input, and returns self-consistent results.
func FuzzClassify(f *testing.F) {
	for _, tc := range classifyCases {
		f.Add([]byte(tc.sql))
	}
	for _, bs := range benchStatements {
		f.Add([]byte(bs.sql))
	}
	for _, s := range []string{
		"KILL QUERY ID 42", "KILL 18446744073709551616", "/*!50700 SELECT 1", "/*M!100100",
		"'\\", "\"\\", "`", "@'", "@@`", "@@session.", "@@session.`", "-- ", "/*!*/*/",
		"SELECT 1 /*! /* nested */ */ ; SELECT 2", "CREATE PROCEDURE p() BEGIN END END END; x",
		"WITH a AS (((", "SET GLOBAL", "SET ,,,", "\x00\x01\x7f\x80\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, sql []byte) {
		orig := bytes.Clone(sql)
		s1 := Classify(sql)
		if !bytes.Equal(sql, orig) {
			t.Fatalf("Classify modified its input")
		}
		if s2 := Classify(bytes.Clone(sql)); s2 != s1 {
			t.Fatalf("Classify(%q) not deterministic: %+v then %+v", sql, s1, s2)
		}

		// Leading whitespace and comments do not change anything.
		prefixed := append([]byte(" \n/* c */ -- c\n# c\n "), sql...)
		if s3 := Classify(prefixed); s3 != s1 {
			t.Fatalf("Classify(%q) = %+v but with a leading comment %+v", sql, s1, s3)
		}

		if s1.Kind >= kindCount {
			t.Fatalf("Classify(%q): kind %d out of range", sql, s1.Kind)
		}
		if s1.Flags >= flagsEnd {
			t.Fatalf("Classify(%q): unknown flags %v", sql, s1.Flags)
		}
		if s1.Flags.Has(FlagLastInsertIDArg) && !s1.Flags.Has(FlagLastInsertID) {
			t.Fatalf("Classify(%q): LastInsertIDArg without LastInsertID", sql)
		}
		if s1.Flags.Has(FlagGetLock) && !s1.Flags.Has(FlagSideEffectFunc) {
			t.Fatalf("Classify(%q): GetLock without SideEffectFunc", sql)
		}
		if s1.Flags.Has(FlagAutocommit) && !s1.Flags.Has(FlagSysVarSet) {
			t.Fatalf("Classify(%q): Autocommit without SysVarSet", sql)
		}
		if s1.Flags.Has(FlagTrxIsolationSet) && !s1.Flags.Has(FlagSysVarSet) {
			t.Fatalf("Classify(%q): TrxIsolationSet without SysVarSet", sql)
		}
		if (s1.KillQuery || s1.KillHasID) && s1.Kind != KindKill {
			t.Fatalf("Classify(%q): kill fields set for kind %v: %+v", sql, s1.Kind, s1)
		}
		if s1.KillHasID && s1.KillByQueryID {
			t.Fatalf("Classify(%q): both KillHasID and KillByQueryID: %+v", sql, s1)
		}
		if !s1.KillHasID && !s1.KillByQueryID && s1.KillID != 0 {
			t.Fatalf("Classify(%q): kill id without KillHasID: %+v", sql, s1)
		}
		if s1.KillByQueryID && (!s1.KillQuery || s1.Kind != KindKill) {
			t.Fatalf("Classify(%q): KillByQueryID without KILL QUERY: %+v", sql, s1)
		}
		// The filter of qualifying names misses none Qualifiers finds.
		Qualifiers(sql, func(name []byte) bool {
			if b := SchemaBits(string(name)); s1.Schemas&b != b {
				t.Fatalf("Classify(%q): Schemas %#x misses %q, which Qualifiers finds", sql, s1.Schemas, name)
			}
			return true
		})
		if IsReadOnly(s1) {
			switch s1.Kind {
			case KindSelect, KindShow, KindAnalyze, KindValues, KindTable:
			default:
				t.Fatalf("Classify(%q): IsReadOnly for kind %v", sql, s1.Kind)
			}
			if s1.Flags&^hintFlags != 0 {
				t.Fatalf("Classify(%q): IsReadOnly with flags %v", sql, s1.Flags)
			}
		}
		if txt := DigestText(sql); len(txt) > 3*len(sql)+1 {
			t.Fatalf("DigestText(%q) = %q: longer than the statement allows", sql, txt)
		}
		_ = s1.Kind.String()
		_ = s1.Flags.String()
	})
}
