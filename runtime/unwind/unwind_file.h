/* unwind_file.h - the unwind table of an open file. */
#ifndef MR_UNWIND_UNWIND_FILE_H
#define MR_UNWIND_UNWIND_FILE_H

#include "unwind/unwind_table.h"

/* Builds the table of the ELF file fd. 0, -ENOEXEC when it is not ELF, or
 * an error of mr_unwind_table_build. */
int mr_unwind_file_build(int fd, struct mr_unwind_table **out);

#endif
