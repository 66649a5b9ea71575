#!/usr/bin/env bash
# Rebuilds tests/corpus-extra/bundles from a clone of operator-framework/community-operators
# at the commit named in SOURCE.md (the selection rule is written there too).
#
#   tests/corpus-extra/extract.sh /path/to/community-operators
#
# Reads the clone's Git objects only (git ls-tree / cat-file), so the clone may be bare.
set -euo pipefail

clone=${1:?usage: $0 CLONE_OF_operator-framework/community-operators}
commit=1591b5e18d47129ed14e83ac2f9832d6cb41bb40
limit=$((100 * 1024))
out="$(cd "$(dirname "$0")" && pwd)/bundles"

# `<size> <sha> <path>` of every file of a bundle folder
# (<top>/<package>/<version>/{manifests,metadata}/...), in tree order.
files=$(git -C "$clone" ls-tree -r -l "$commit" -- community-operators upstream-community-operators |
  awk -F'\t' '{ split($1, m, " "); n = split($2, p, "/");
                if (n >= 5 && (p[4] == "manifests" || p[4] == "metadata")) print m[4], m[3], $2 }')

# Bundles: folders with metadata/annotations.yaml, the same files and contents only once (the
# first in path order), at most $limit bytes in all.
selected=$(printf '%s\n' "$files" | awk -v limit="$limit" '
  { split($3, p, "/"); key = p[1] "/" p[2] "/" p[3]; rel = substr($3, length(key) + 2)
    if (!(key in size)) order[++count] = key
    size[key] += $1; sig[key] = sig[key] rel ":" $2 " "
    if (rel == "metadata/annotations.yaml") annotated[key] = 1 }
  END { for (i = 1; i <= count; i++) { key = order[i]
          if (!(key in annotated) || (sig[key] in seen)) continue
          seen[sig[key]] = 1
          if (size[key] <= limit) print key } }')

rm -rf "$out"
while read -r size sha path; do
  key=$(cut -d/ -f1-3 <<<"$path")
  grep -qxF "$key" <<<"$selected" || continue
  mkdir -p "$out/$(dirname "$path")"
  git -C "$clone" cat-file blob "$sha" >"$out/$path"
done <<<"$files"
echo "$(wc -l <<<"$selected") bundles, $(du -sb "$out" | cut -f1) bytes in $out"
