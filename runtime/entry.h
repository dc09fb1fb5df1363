/* entry.h - what is called into the runtime library by name from outside
 * the FFI: the executable's entry point, and the two functions that hand Lua
 * the preprocessed text of api.h and api_test.h to give to ffi.cdef. */
#ifndef MR_ENTRY_H
#define MR_ENTRY_H

#define MR_EXPORT __attribute__((visibility("default")))

/* Runs require("moonrover.cli").main(argv) in a new Lua state whose modules
 * come from $MOONROVER_LUA_DIR, else installed_dir, else source_dir (the
 * tree the binary was built from). Returns the exit code. */
MR_EXPORT int mr_cli_main(int argc, char **argv, const char *installed_dir, const char *source_dir);
MR_EXPORT const char *mr_api_cdef(void);
MR_EXPORT const char *mr_api_test_cdef(void);

#endif
