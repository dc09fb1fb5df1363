/* output_file.h - how every output file is written: into a new unnamed file
 * in the target's directory (files/unnamed_file.h; where the file system
 * cannot, a new temporary file beside the target, created exclusively, never
 * through a link), every write checked, then synced and put in place over the
 * target in one step, so that a failure (a full disk, say) leaves the target
 * as it was and is reported, and a run killed before the end (even by SIGKILL)
 * leaves no file behind where unnamed files are supported.
 *
 * Links are never followed to the target, nor written through: a target that
 * is a symbolic link is refused (replacing it would silently undo what its
 * owner set up, and in /tmp it is the classic trap for root), and a link in
 * the directories on the way is followed only as protected_symlinks allows
 * (files/safe_path.h). A FIFO or a character device (/dev/null) is written in
 * place, as a shell's `>` would, since replacing it would break it for
 * everyone. "-" means standard output, written directly. The api.h type
 * mr_output. */
#ifndef MR_FILES_OUTPUT_FILE_H
#define MR_FILES_OUTPUT_FILE_H

#include "api.h"

/* Writes len bytes, or remembers the first error for mr_output_commit;
 * returns 0 or that negative errno. */
int mr_output_write_all(mr_output *o, const void *data, size_t len);
/* The first error met writing o, or 0; with why in err: what failed and
 * where the data was going, without the path (mr_output_commit's message
 * after its "cannot write PATH: "). */
int mr_output_failed(const mr_output *o, char *err, size_t errlen);

#endif
