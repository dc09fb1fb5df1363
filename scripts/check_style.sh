#!/usr/bin/env bash
# Fails on any formatting (clang-format, .clang-format) or Lua lint (luacheck,
# .luacheckrc) finding in the project's sources, and on a repository path
# named in a file that is not in the tree (before any build: the build's own
# outputs are named by their place in build/). scripts/test.sh runs it first.
# To fix the C side: clang-format -i FILE...
set -euo pipefail
shopt -s extglob
cd "$(dirname "$0")/.."

# The project's files: git's list in a checkout; without one (a downloaded
# archive) every file but those of .git, the build trees (build*/ and
# $BUILD_DIR) and what .gitignore names (generated or left over by a run).
list_files() {
  if [ -e .git ] && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files
    return
  fi
  local prune=(-path ./.git -o -path './build*') pattern
  [ -n "${BUILD_DIR:-}" ] && prune+=(-o -path "./${BUILD_DIR#./}")
  if [ -f .gitignore ]; then
    while IFS= read -r pattern; do
      pattern=${pattern%/}
      case "$pattern" in
        '' | '#'*) ;;
        /*) prune+=(-o -path ".$pattern") ;;
        *) prune+=(-o -name "$pattern") ;;
      esac
    done <.gitignore
  fi
  find . \( "${prune[@]}" \) -prune -o -type f -print | sed 's@^\./@@' | sort
}

# Every listed file and every folder above one: what a path may name.
declare -A known
index_known() {
  local f
  for f in "${all_files[@]}"; do
    known[$f]=1
    while [[ $f == */* ]]; do
      f=${f%/*}
      known[$f]=1
    done
  done
}

# The listed files whose references are checked, NUL-separated: all but
# CHANGELOG.md and spec/integration/check_style_spec.lua (made-up trees).
scanned_files() {
  printf '%s\n' "${all_files[@]}" | grep -vx -e CHANGELOG.md -e spec/integration/check_style_spec.lua | tr '\n' '\0'
}

# The paths named in them, as FILE:LINE:PATH: from one of the tree's folders
# (./ allowed before it), and from a folder of runtime/ as includes name
# them (files/output_file.c: .c and .h files only).

named_paths() {
  local subsystems
  subsystems=$(printf '%s\n' "${all_files[@]}" | sed -n 's@^runtime/\([^/]*\)/.*@\1@p' | sort -u | paste -sd'|')
  scanned_files | xargs -0 grep -IHno -E '(^|[^A-Za-z0-9_./$<-])(\./)?(runtime|lua|spec|docs|scripts|bpf)/[A-Za-z0-9_./*{}-]*' || true
  [ -n "$subsystems" ] || return 0
  scanned_files | xargs -0 grep -IHno -E "(^|[^A-Za-z0-9_./\$<-])($subsystems)/[A-Za-z0-9_]+\.[ch]([^A-Za-z0-9_]|\$)" |
    sed -E 's@^([^:]*:[0-9]+:)[^A-Za-z0-9_]?@\1runtime/@; s@[^A-Za-z0-9_.]$@@' || true
}

# Reports every path under one of the tree's folders named in a file that is
# not among the listed files and their folders (an untracked leftover does
# not count), as FILE:LINE. Not checked: globs (*, {a,b}), examples whose
# name is a placeholder (a whole component NAME, x or y, before any
# extension: NAME/, x.lua; or NAME_...: NAME_spec.lua), system headers
# (<bpf/libbpf.h>), files the build generates (*.skel.h, *_cdef.c,
# *.pb-c.[ch]), and CHANGELOG.md, whose entries name the tree as it was then,
# nor check_style_spec.lua, whose trees are made up.
check_paths() {
  local file line tok status=0
  index_known
  while IFS=: read -r file line tok; do
    tok=${tok#"${tok%%[a-z]*}"}
    tok=${tok%%+([.,:\)-])}
    tok=${tok%/}
    case "$tok" in *'*'* | *'{'* | *.skel.h | *_cdef.c | *.pb-c.[ch]) continue ;; esac
    [[ $tok =~ (^|/)((NAME|x|y)(\.[^/]*)?|NAME_[^/]*)(/|$) ]] && continue
    if [ -z "${known[$tok]:-}" ]; then
      echo "$file:$line: $tok does not exist" >&2
      status=1
    fi
  done < <(named_paths)
  return "$status"
}

mapfile -t all_files < <(list_files)
mapfile -t c_files < <(printf '%s\n' "${all_files[@]}" |
  grep -E '^(runtime|bpf)/.*\.[ch]$|^spec/.*\.(c|cpp)$' | grep -vx 'bpf/vmlinux.h')
mapfile -t lua_files < <(printf '%s\n' "${all_files[@]}" | grep -E '^(lua|spec|scripts)/.*\.lua$')

status=0
if ! clang-format --style=file --dry-run --Werror "${c_files[@]}"; then
  echo "check_style: the C files above are not formatted: run clang-format -i on them" >&2
  status=1
fi
if ! luacheck --no-cache --formatter plain -- "${lua_files[@]}"; then
  echo "check_style: luacheck findings above" >&2
  status=1
fi
if ! check_paths; then
  echo "check_style: the paths above are named but not in the tree: fix or drop the reference" >&2
  status=1
fi
exit "$status"
