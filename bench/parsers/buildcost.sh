#!/usr/bin/env bash
# What each parser would cost the shardgate binary: the committed main module
# is copied three times (as is, + TiDB parser, + Vitess sqlparser, each wired
# in from cmd/shardgate so the linker keeps it), each with an empty module
# cache, and built after a build of the unchanged copy warmed a shared
# build cache. Prints added download, compile time, binary size, modules.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(git -C "$here" rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
# Modules already fetched on this machine come from its cache, the rest from
# the configured proxy; the figures are the same either way.
export GOPROXY="file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)"
export GOFLAGS=-mod=mod
version() { (cd "$here" && go list -m -f '{{.Version}}' "$1"); }
# collations: Vitess's collations alone, which issue 13 wants for string
# keys whichever parser is chosen; vitess: sqlparser on top of them.
variants=(tidb collations vitess)
declare -A module=([tidb]=github.com/pingcap/tidb/pkg/parser [collations]=vitess.io/vitess [vitess]=vitess.io/vitess)

mkdir "$work/base"
git -C "$root" archive HEAD | tar -x -C "$work/base"
for v in "${variants[@]}"; do
	cp -r "$work/base" "$work/$v"
	cp "$here/buildcost/$v.go.txt" "$work/$v/cmd/shardgate/parser_probe.go"
	if [[ $v == vitess ]]; then cp "$here/buildcost/collations.go.txt" "$work/$v/cmd/shardgate/collations_probe.go"; fi
	(cd "$work/$v" && GOMODCACHE="$work/mod-$v" go get "${module[$v]}@$(version "${module[$v]}")" &&
		GOMODCACHE="$work/mod-$v" go mod tidy)
done
(cd "$work/base" && GOMODCACHE="$work/mod-base" go mod download)

# Warm one build cache with the unchanged binary, then give each variant
# its own copy so neither warms the other.
(cd "$work/base" && GOMODCACHE="$work/mod-base" GOCACHE="$work/cache" go build -o "$work/shardgate-base" ./cmd/shardgate)
size() { du -sk "$1" | cut -f1; }
printf '| | zips of linked modules (MB) | all zips fetched (MB) | module cache (MB) | compile (wall s / cpu s) | binary (MB) | go list -m all | modules linked |\n|---|---:|---:|---:|---:|---:|---:|---:|\n'
line() { # name modcache binary wall cpu dir
	local zips mods
	zips=$(du -sk "$2/cache/download" | cut -f1)
	mods=$(size "$2")
	printf '| %s | %.1f | %.1f | %.1f | %s / %s | %.1f | %s | %s |\n' "$1" "$(bc <<<"scale=1; $(linked "$2" "$3")/1024")" "$(bc <<<"scale=1; $zips/1024")" "$(bc <<<"scale=1; $mods/1024")" \
		"$4" "$5" "$(bc <<<"scale=1; $(stat -c %s "$3")/1048576")" "$(cd "$6" && GOMODCACHE="$2" go list -m all | wc -l)" \
		"$(go version -m "$3" | grep -c $'^\tdep')"
}
# linked sums the zips of the modules the binary links (go version -m):
# what a build must download, whatever else `go mod tidy` fetches.
linked() { # modcache binary -> KB
	go version -m "$2" | awk -F'\t' '$2 == "dep" {print $3 "/@v/" $4 ".zip"}' |
		sed 's/[A-Z]/!\L&/g' | (cd "$1/cache/download" && xargs -r du -k) | awk '{s += $1} END {print s + 0}'
}
# The largest module zips a variant fetched that the unchanged build did not.
largest() {
	comm -13 <(cd "$work/mod-base/cache/download" && find . -name '*.zip' | sort) \
		<(cd "$work/mod-$1/cache/download" && find . -name '*.zip' | sort) |
		(cd "$work/mod-$1/cache/download" && xargs -r du -k) | sort -rn | head -5 |
		awk -v v="$1" '{printf "  %s: %6.1f MB %s\n", v, $1/1024, $2}'
}
line shardgate "$work/mod-base" "$work/shardgate-base" - - "$work/base"
for v in "${variants[@]}"; do
	cp -r "$work/cache" "$work/cache-$v"
	start=$(date +%s.%N)
	cpu0=$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
	(cd "$work/$v" && GOMODCACHE="$work/mod-$v" GOCACHE="$work/cache-$v" go build -o "$work/shardgate-$v" ./cmd/shardgate)
	wall=$(bc <<<"scale=1; ($(date +%s.%N) - $start)/1")
	cpu=$(bc <<<"scale=1; ($(awk '{print $14+$15+$16+$17}' /proc/$$/stat) - $cpu0)/$(getconf CLK_TCK)")
	line "+ $v" "$work/mod-$v" "$work/shardgate-$v" "$wall" "$cpu" "$work/$v"
	SHARDGATE_PARSER_PROBE='SELECT 1 FROM t WHERE id = 42' "$work/shardgate-$v" >/dev/null
done
echo
echo "go.mod changes to existing requirements (none printed: none moved):"
for v in "${variants[@]}"; do
	diff <(grep -E '^\s+\S+ v' "$work/base/go.mod" | sort) <(grep -E '^\s+\S+ v' "$work/$v/go.mod" | sort) |
		grep '^>' | awk -v v="$v" '{print $2}' | while read -r m; do
			grep -qE "^\s+$m " "$work/base/go.mod" && echo "  $v: $m $(grep -E "^\s+$m " "$work/base/go.mod" | awk '{print $2}') -> $(grep -E "^\s+$m " "$work/$v/go.mod" | awk '{print $2}')"
		done || true
done
echo "largest added module zips:"
for v in "${variants[@]}"; do largest "$v"; done
