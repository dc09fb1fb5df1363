/* sym_file.c - loads a file's symbols (from its debug file when it is
 * stripped) and maps file offsets to function names. */
#include "symbols/sym_file.h"
#include "elf/elf_debug_file.h"
#include "symbols/sym_plt.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* Reads the symbols of the separate debug file; 0 only when it has some. */
static int load_debug_symbols(const struct mr_elf_info *info, const char *root, const char *path,
			      struct mr_sym_table *out)
{
	int fd = mr_elf_debug_file_open(root, path, info);
	Elf *e;
	int rc;

	if (fd < 0)
		return fd;
	rc = mr_elf_open(fd, &e);
	if (rc == 0) {
		rc = mr_sym_elf_read(e, out);
		elf_end(e);
	}
	close(fd);
	if (rc == 0 && out->n == 0)
		rc = -ENOENT;
	return rc;
}

/* Function symbols (of the debug file when e is stripped), then the PLT
 * stubs, which only e itself describes (a debug file's .plt is empty). */
static int load_symbols(Elf *e, const struct mr_elf_info *info, const char *root, const char *path,
			struct mr_sym_table *out)
{
	int rc = 0;

	if (info->has_symtab || load_debug_symbols(info, root, path, out) != 0)
		rc = mr_sym_elf_read(e, out);
	if (rc == 0)
		rc = mr_sym_plt_read(e, out);
	if (rc < 0) {
		mr_sym_table_free(out);
		return rc;
	}
	mr_sym_table_sort(out);
	return 0;
}

int mr_sym_file_load(Elf *e, struct mr_elf_info *info, const char *root, const char *path,
		     struct mr_sym_file **out)
{
	struct mr_sym_file *f = calloc(1, sizeof(*f));
	int rc;

	if (!f) {
		mr_elf_info_free(info);
		return -ENOMEM;
	}
	f->info = *info;
	rc = load_symbols(e, &f->info, root, path, &f->syms);
	if (rc < 0) {
		mr_sym_file_free(f);
		return rc;
	}
	mr_elf_info_build_id_hex(&f->info, f->build_id, sizeof(f->build_id));
	f->bytes = sizeof(*f) + f->info.nsegs * sizeof(*f->info.segs) + mr_sym_table_bytes(&f->syms);
	*out = f;
	return 0;
}

const char *mr_sym_file_lookup(const struct mr_sym_file *f, uint64_t offset, int return_address)
{
	uint64_t vaddr;

	if (mr_elf_info_vaddr(&f->info, offset, &vaddr) < 0)
		return NULL;
	return return_address ? mr_sym_table_find_return(&f->syms, vaddr)
			      : mr_sym_table_find(&f->syms, vaddr);
}

void mr_sym_file_free(struct mr_sym_file *f)
{
	if (!f)
		return;
	mr_elf_info_free(&f->info);
	mr_sym_table_free(&f->syms);
	free(f->key);
	free(f);
}
