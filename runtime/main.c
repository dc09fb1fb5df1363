/* main.c - the moonrover executable: hands the command line to the runtime's
 * Lua command line (runtime/script_host/cli.c). */
#include "entry.h"

int main(int argc, char **argv)
{
	return mr_cli_main(argc, argv, MR_LUA_DIR_INSTALLED, MR_LUA_DIR_SOURCE);
}
