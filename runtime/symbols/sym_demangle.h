/* sym_demangle.h - readable names for C++ and Rust (legacy and v0) symbols. */
#ifndef MR_SYMBOLS_SYM_DEMANGLE_H
#define MR_SYMBOLS_SYM_DEMANGLE_H

/* Returns the readable form of a symbol name (malloc'd; the caller frees it),
 * or NULL when memory ran out: the symbol version ("@@GLIBC_2.17") dropped,
 * C++ and Rust demangled, Rust legacy "::h<16 hex>" hashes removed. */
char *mr_sym_demangle(const char *name);

#endif
