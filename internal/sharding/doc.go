// Package sharding places rows of sharded tables: a Rule maps a shard-key
// Value, converted to the key column's type as MySQL compares it, to a
// sub-table index; a Layout maps sub-tables to shards (clusters). It is a
// pure library: no I/O, no global mutable state.
//
// # Typed keys
//
// Convert turns a literal or a prepared-statement parameter into a Value of
// the key column's ColumnType, exactly as the server compares that column
// with it: on an INT key 42, '42', 42.0 and 0x2A are all 42; on a
// utf8mb4_general_ci key 'Abc' and 'abc ' are one key. When a literal does
// not denote exactly one key ('42abc', 42.5, 1e300 on an INT key, a number on
// a string key) Convert returns an error wrapping ErrInexact and the caller
// must consider every sub-table that could hold the row.
//
// # Canonical bytes and the hash rule
//
// The hash rule places a non-NULL key on
//
//	XXH64(canonical bytes, seed 0) mod N
//
// where N is the number of sub-tables and the canonical bytes are:
//
//   - integers (every integral number: INT, BIGINT UNSIGNED, DECIMAL 42.00,
//     DOUBLE 42.0): the 8-byte big-endian two's-complement of the value
//     (unsigned values above 2^63-1 as their 8-byte big-endian form);
//   - non-integral DECIMALs: the canonical decimal text, ASCII: optional
//     '-', integer digits without leading zeros ("0" if none), '.',
//     fraction digits without trailing zeros ("-12.5", "0.25");
//   - non-integral DOUBLEs: the 8-byte big-endian IEEE-754 bits;
//   - strings: the weight string under the column's collation: binary —
//     the bytes as they are; utf8mb4_bin — each code point as 3 bytes
//     big-endian; utf8mb4_general_ci — each character's 2-byte big-endian
//     weight (mariadbd's WEIGHT_STRING; U+FFFD's for characters beyond the
//     BMP); for the two PAD SPACE collations trailing spaces are removed
//     first; the other collations (collation.go's vitessNames): the key,
//     converted from utf8mb4 to the column's character set, weighed by
//     Vitess's colldata, trailing space weights removed (all PAD SPACE);
//   - DATE and DATETIME: the ASCII text "YYYY-MM-DD hh:mm:ss.ffffff" (a DATE
//     is its midnight).
//
// These bytes decide where data already lives; TestHashGolden and
// TestCollationGolden pin them.
//
// # NULL
//
// NULL is a key like any other: hash, mod and kingshard rules put it on
// sub-table 0; range and date rules on the sub-table holding the lowest keys
// (MySQL's RANGE partitioning does the same); list rules where NULL is
// listed, and nowhere (ErrNoSubTable) if it is not.
package sharding
