/* main.c - the moonrover executable: hands the command line to the runtime's
 * Lua command line (runtime/script_host/cli.c), with where the bundled Lua
 * is installed and, in the build tree, where it and its generated modules
 * are. */
#include "entry.h"

int main(int argc, char **argv)
{
	const struct mr_lua_dirs dirs = {
		.installed = MR_LUA_DIR_INSTALLED,
		.source = MR_LUA_DIR_SOURCE,
		.generated = MR_LUA_DIR_GENERATED,
	};

	return mr_cli_main(argc, argv, &dirs);
}
