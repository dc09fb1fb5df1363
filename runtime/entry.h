/* entry.h - what is called into the runtime library by name from outside
 * the FFI: the executable's entry point (and, inside the library, where it
 * found the generated Lua modules), and the two functions that hand Lua the
 * preprocessed text of api.h and api_test.h to give to ffi.cdef. */
#ifndef MR_ENTRY_H
#define MR_ENTRY_H

#define MR_EXPORT __attribute__((visibility("default")))

/* Where the bundled Lua modules are: installed (generated modules beside
 * them), or in the tree the binary was built from, the source directory
 * then the build's generated one (moonrover.consts). */
struct mr_lua_dirs {
	const char *installed;
	const char *source;
	const char *generated;
};

/* Runs require("moonrover.cli").main(argv) in a new Lua state whose modules
 * come from $MOONROVER_LUA_DIR, else the installed directory, else the
 * source and generated directories. Returns the exit code. */
MR_EXPORT int mr_cli_main(int argc, char **argv, const struct mr_lua_dirs *dirs);
/* The build's generated modules directory when mr_cli_main uses the source
 * tree's modules, else NULL: the agent's scripts search it last too. */
const char *mr_cli_generated_dir(void);
MR_EXPORT const char *mr_api_cdef(void);
MR_EXPORT const char *mr_api_test_cdef(void);

#endif
