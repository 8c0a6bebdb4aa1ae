package sharding

import (
	"fmt"
	"hash/crc32"
	"strconv"
)

// KingshardHash places rows bit-exactly as kingshard's HashShard does
// (proxy/router/shard.go, HashValue): an integer key k goes to
// uint64(k) mod n (negative keys wrap as two's complement); a string key
// goes to its value if it parses as an unsigned decimal integer, else to
// crc32.ChecksumIEEE(its bytes) mod n. kingshard hashes the string as
// written, so only under the binary collation is a lookup exact: under a
// PAD SPACE or _ci collation rows equal to the key may sit on any sub-table.
// NULL, which kingshard cannot route, goes to sub-table 0.
type KingshardHash struct{ n int }

// NewKingshardHash is kingshard's hash rule over n = sum(locations) sub-tables.
func NewKingshardHash(n int) (*KingshardHash, error) {
	if err := checkCount(n); err != nil {
		return nil, err
	}
	return &KingshardHash{n: n}, nil
}

func (k *KingshardHash) SubTables() int { return k.n }

func (k *KingshardHash) Index(v Value) (int, error) {
	switch v.kind {
	case KindNull:
		return 0, nil
	case KindInt, KindUint:
		return int(uint64(v.i) % uint64(k.n)), nil
	case KindString:
		if v.coll != CollationBinary {
			return 0, fmt.Errorf("kingshard hash on a %s string: %w", v.coll, ErrInexact)
		}
		return int(kingshardStringHash(v.raw) % uint64(k.n)), nil
	}
	return 0, fmt.Errorf("kingshard hash rule: key %s is neither an integer nor a string", v)
}

func kingshardStringHash(s string) uint64 {
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return u
	}
	return uint64(crc32.ChecksumIEEE([]byte(s)))
}

func (k *KingshardHash) Prune(iv Interval) (Set, error) { return expandInts(k, iv) }

// NewKingshardRange is kingshard's range rule (NumRangeShard with
// ParseNumSharding): sub-table i holds [i*rowLimit, (i+1)*rowLimit);
// negative keys and keys past the last sub-table are ErrNoSubTable.
func NewKingshardRange(n int, rowLimit int64) (*Range, error) {
	if err := checkCount(n); err != nil {
		return nil, err
	}
	if rowLimit < 1 {
		return nil, fmt.Errorf("kingshard range: table_row_limit must be positive, got %d", rowLimit)
	}
	bounds := make([]Bound, n)
	for i := range bounds {
		bounds[i] = Bound{Start: IntValue(int64(i) * rowLimit), End: IntValue(int64(i+1) * rowLimit), HasStart: true, HasEnd: true}
	}
	return NewRange(bounds)
}
