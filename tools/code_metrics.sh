#!/usr/bin/env bash
# Size figures of the source tree, for design reviews (issue #19's "measure the result"):
#
#   tools/code_metrics.sh [DIR...]        (default: src)
#
# Prints, per directory: files, lines, the largest files, every function longer than 100 lines
# (lambdas counted inside their function, not on their own) and which files include tree-sitter
# outside src/rust/. Needs Universal Ctags (Debian: universal-ctags) for function extents.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cd "$here"
[ $# -gt 0 ] || set -- src
command -v ctags >/dev/null || {
  echo "code_metrics: needs universal-ctags (apt-get install universal-ctags)" >&2
  exit 2
}

for dir in "$@"; do
  [ -d "$dir" ] || {
    echo "code_metrics: $dir: not a directory" >&2
    exit 2
  }
  mapfile -t files < <(find "$dir" -name '*.cpp' -o -name '*.hpp' | sort)
  total=0
  for f in "${files[@]}"; do total=$((total + $(wc -l <"$f"))); done
  echo "== $dir: ${#files[@]} files, $total lines"
  echo "-- files over 600 lines:"
  for f in "${files[@]}"; do
    n=$(wc -l <"$f")
    [ "$n" -gt 600 ] && printf '%6d %s\n' "$n" "$f"
  done | sort -rn || true
  echo "-- functions over 100 lines:"
  ctags --kinds-c++=f --fields=+ne -o - "${files[@]}" 2>/dev/null |
    awk -F'\t' '$1 !~ /^__anon/ {
      line = ""; end = "";
      for (i = 4; i <= NF; i++) {
        if ($i ~ /^line:/) line = substr($i, 6);
        if ($i ~ /^end:/) end = substr($i, 5);
      }
      if (line != "" && end != "" && end - line + 1 > 100)
        printf "%6d %s:%s %s\n", end - line + 1, $2, line, $1
    }' | sort -rn
  echo "-- count of functions over 100 lines: $(ctags --kinds-c++=f --fields=+ne -o - "${files[@]}" 2>/dev/null |
    awk -F'\t' '$1 !~ /^__anon/ { l=""; e=""; for (i=4;i<=NF;i++) { if ($i ~ /^line:/) l=substr($i,6); if ($i ~ /^end:/) e=substr($i,5) } if (l!="" && e!="" && e-l+1>100) n++ } END { print n+0 }')"
  echo "-- reads of a node's tree-sitter kind name (Node::syntax) outside src/rust/:"
  grep -n '\.syntax\b' "${files[@]}" | grep -v '^src/rust/' || echo "   (none)"
  echo "-- tree-sitter outside src/rust/:"
  grep -ln 'tree_sitter/\|TSNode' "${files[@]}" | grep -v '^src/rust/' || echo "   (none)"
done
