/* pid_file.h - the agent's pid file: a file naming its pid that it keeps
 * locked (flock, exclusive) for as long as it runs, so that
 * - a second agent given the same file finds it held, names the holder and
 *   stops;
 * - `moonrover reload` signals only the process that holds the lock of the
 *   file that names it, never one that merely has that pid (a stale file, a
 *   reused pid, a `moonrover profile`);
 * - only its holder removes it.
 * The file is created new under a temporary name in its directory (never
 * through a link), written and locked there, then linked into place, or
 * renamed over a stale one whose lock was taken first: the path never names
 * a file that is half written or unlocked while its agent runs. A path that
 * is a symbolic link is refused, and so is a directory that other users can
 * write, unless it is sticky (like /tmp) and root's or this user's. The
 * mr_pid_file type is declared in api_test.h for specs. */
#ifndef MR_FILES_PID_FILE_H
#define MR_FILES_PID_FILE_H

#include "api_test.h"

#endif
