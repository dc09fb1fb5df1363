/* sym_demangle.h - readable names for C++ and Rust (legacy and v0) symbols. */
#ifndef MR_SYM_DEMANGLE_H
#define MR_SYM_DEMANGLE_H

/* Returns the demangled form of name (malloc'd; the caller frees it), or
 * NULL when name is not mangled or memory ran out. Rust legacy "::h<16 hex>"
 * hashes are removed. */
char *mr_demangle(const char *name);

#endif
