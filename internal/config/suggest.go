package config

import (
	"fmt"
	"strings"
)

// suggest explains an unknown key: the closest known key when it is likely
// a typo, otherwise the list of known keys.
func suggest(key string, known []string) string {
	best, bestDist := "", 3 // suggest only within edit distance 2
	for _, k := range known {
		dist := editDistance(key, k)
		// "maxOpen" and "max-open" are clearly meant as "max_open" even
		// though they are 2+ edits away.
		if normalizeKey(key) == normalizeKey(k) {
			dist = 0
		}
		if dist < bestDist {
			best, bestDist = k, dist
		}
	}
	if best != "" {
		return fmt.Sprintf("(did you mean %q?)", best)
	}
	return "(known keys: " + strings.Join(known, ", ") + ")"
}

func normalizeKey(s string) string {
	s = strings.ToLower(s)
	return strings.NewReplacer("_", "", "-", "", " ", "").Replace(s)
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
