/* elf_debug_file.h - finds the separate debug file of a stripped ELF file: by
 * build-id under /usr/lib/debug/.build-id, else by .gnu_debuglink name in the
 * file's directory, its .debug/ and /usr/lib/debug/<dir>/, CRC32 checked. */
#ifndef MR_ELF_ELF_DEBUG_FILE_H
#define MR_ELF_ELF_DEBUG_FILE_H

#include "elf/elf_file.h"

/* root is "" or a process root such as "/proc/PID/root" (tried first, then
 * the host); path is the file's path inside root. Returns an open read-only
 * file descriptor, or a negative errno (-ENOENT when none is found). */
int mr_elf_debug_file_open(const char *root, const char *path, const struct mr_elf_info *info);

#endif
