#!/usr/bin/env bash
# Fails on any formatting (clang-format, .clang-format) or Lua lint (luacheck,
# .luacheckrc) finding in the project's sources, and on a repository path
# named in a file that does not exist. scripts/test.sh runs it first.
# To fix the C side: clang-format -i FILE...
set -euo pipefail
shopt -s extglob
cd "$(dirname "$0")/.."

# The project's files: git's list in a checkout; without one (a downloaded
# archive) every file but those of .git and the build trees (build*/).
list_files() {
  if [ -e .git ] && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files
  else
    find . \( -path ./.git -o -path './build*' \) -prune -o -type f -print | sed 's@^\./@@' | sort
  fi
}

# Reports every path under one of the tree's folders named in a file that is
# not there, as FILE:LINE. Not checked: globs (*, {a,b}), examples whose name
# is a placeholder (NAME_spec.lua, x.lua), system headers (<bpf/libbpf.h>),
# files the build generates (*.skel.h, *_cdef.c, *.pb-c.[ch]), and
# CHANGELOG.md, whose entries name the tree as it was then.
check_paths() {
  local file line tok status=0
  while IFS=: read -r file line tok; do
    tok=${tok#"${tok%%[a-z]*}"}
    tok=${tok%%+([.,:\)-])}
    case "$tok" in *'*'* | *'{'* | *.skel.h | *_cdef.c | *.pb-c.[ch]) continue ;; esac
    [[ $tok =~ (^|/)(NAME|[xy])([._/]|$) ]] && continue
    if [ ! -e "$tok" ]; then
      echo "$file:$line: $tok does not exist" >&2
      status=1
    fi
  done < <(printf '%s\n' "${all_files[@]}" | grep -vx 'CHANGELOG.md' | tr '\n' '\0' |
    xargs -0 grep -IHno -E '(^|[^A-Za-z0-9_./$<-])(runtime|lua|spec|docs|scripts|bpf)/[A-Za-z0-9_./*{}-]*' || true)
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
