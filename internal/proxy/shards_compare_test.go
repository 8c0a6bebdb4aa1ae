package proxy_test

import (
	"testing"

	"github.com/shardgate/shardgate/internal/difftest"
)

// TestShardedKeyComparisonsAsTheServer: a shard key compared with a value
// of another type, sign, scale or collation is routed as the server
// compares them (issue 20's audit): a string key compared with a number
// (every string is a number there), an INT key with values out of its
// range, negative, fractional, in strings and exponents, a DATE key with
// a DATETIME, a string key under an explicit other collation.
func TestShardedKeyComparisonsAsTheServer(t *testing.T) {
	gen := difftest.NewGenerator(20)
	d := startShardedDiff(t, gen)
	difftest.LoadData(t, d.ref, d.got, gen, diffOptions())
	compareStatements(t, d, reads(false,
		// string key (utf8mb4_unicode_ci) against numbers and other collations
		"SELECT id, name FROM sf_member WHERE name = 0",
		// more warnings than max_error_count: 64 listed, all counted
		"SHOW COUNT(*) WARNINGS",
		"SELECT @@warning_count",
		"SELECT id, name FROM sf_member WHERE name IN (0, 'zoe')",
		"SELECT id, name FROM sf_member WHERE name = 'ss' COLLATE utf8mb4_bin",
		"SELECT id, name FROM sf_member WHERE name = 'ß' COLLATE utf8mb4_general_ci",
		"SELECT id, name FROM sf_member WHERE name = _latin1'Zo\xeb'",
		"SELECT id, name FROM sf_member WHERE name = 'walter\t'",
		"SELECT id, name FROM sf_member WHERE name = 'WALTER   '",
		"SELECT id, name FROM sf_member WHERE name = x'5A6FC3AB'",
		"SELECT id, name FROM sf_member WHERE name <=> NULL",
		"SELECT id, name FROM sf_member WHERE name BETWEEN 'a' AND 'b'",
		// INT key against values of other types, signs and ranges
		"SELECT id FROM sf_user WHERE id = 4294967338",
		"SELECT id FROM sf_user WHERE id = -4294967338",
		"SELECT id FROM sf_user WHERE id = 18446744073709551615",
		"SELECT id FROM sf_user WHERE id = -9223372036854775809",
		"SELECT id FROM sf_user WHERE id = 7.5",
		"SELECT id FROM sf_user WHERE id = '7.0'",
		"SELECT id FROM sf_user WHERE id = ' 7'",
		"SELECT id FROM sf_user WHERE id = '7e0'",
		"SELECT id FROM sf_user WHERE id = 7.0000000000000000000001",
		"SELECT id FROM sf_user WHERE id IN (-0, 0.0, '-0')",
		"SELECT id FROM sf_user WHERE id IN (7, NULL)",
		"SELECT id FROM sf_user WHERE id = NULL",
		"SELECT id FROM sf_user WHERE id > 2147483647 OR id < -2147483648",
		// DATE key against DATETIMEs, numbers and strings
		"SELECT day, seq FROM sf_log WHERE day = '2023-03-05 00:00:00.000000'",
		"SELECT day, seq FROM sf_log WHERE day = 20230305000000",
		"SELECT day, seq FROM sf_log WHERE day = 20230305.0",
		"SELECT day, seq FROM sf_log WHERE day = '2023-03-05T00:00:00'",
		"SELECT day, seq FROM sf_log WHERE day IN ('2023-3-5', 20230306, DATE'2023-03-07')",
		"SELECT day, seq FROM sf_log WHERE day BETWEEN 20230301 AND '2023-03-10 12:00:00'",
	))
}
