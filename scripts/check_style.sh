#!/usr/bin/env bash
# Fails on any formatting (clang-format, .clang-format) or Lua lint (luacheck,
# .luacheckrc) finding in the tracked sources. scripts/test.sh runs it first.
# To fix the C side: clang-format -i FILE...
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t c_files < <(git ls-files -- 'runtime/*.[ch]' 'bpf/*.[ch]' 'spec/*.c' 'spec/*.cpp' | grep -vx 'bpf/vmlinux.h')
mapfile -t lua_files < <(git ls-files -- 'lua/*.lua' 'spec/*.lua' 'scripts/*.lua')

status=0
if ! clang-format --style=file --dry-run --Werror "${c_files[@]}"; then
  echo "check_style: the C files above are not formatted: run clang-format -i on them" >&2
  status=1
fi
if ! luacheck --no-cache --formatter plain -- "${lua_files[@]}"; then
  echo "check_style: luacheck findings above" >&2
  status=1
fi
exit "$status"
