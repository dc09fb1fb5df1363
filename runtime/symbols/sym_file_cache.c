/* sym_file_cache.c - the identity-keyed cache of parsed ELF files. A fstat-based
 * alias (device, inode, size, mtime) leads to the primary key so that a known
 * file is not even opened as ELF; a new file is probed for its build-id
 * before its symbols are parsed. */
#include "symbols/sym_file_cache.h"
#include "base/string_map.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct mr_sym_file_cache {
	struct mr_string_map *files;   /* primary key -> struct mr_sym_file */
	struct mr_string_map *aliases; /* inode key -> primary key (char *) */
	struct mr_sym_file *lru_head;  /* most recently used */
	struct mr_sym_file *lru_tail;
	size_t bytes;
	size_t max_bytes;
	struct mr_sym_file_cache_stats stats;
};

struct mr_sym_file_cache *mr_sym_file_cache_new(size_t max_bytes)
{
	struct mr_sym_file_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->files = mr_string_map_new(NULL);
	c->aliases = mr_string_map_new(free);
	if (!c->files || !c->aliases) {
		mr_sym_file_cache_free(c);
		return NULL;
	}
	c->max_bytes = max_bytes;
	return c;
}

void mr_sym_file_cache_free(struct mr_sym_file_cache *c)
{
	struct mr_sym_file *f, *next;

	if (!c)
		return;
	for (f = c->lru_head; f; f = next) {
		next = f->lru_next;
		mr_sym_file_free(f);
	}
	mr_string_map_free(c->files);
	mr_string_map_free(c->aliases);
	free(c);
}

static void lru_unlink(struct mr_sym_file_cache *c, struct mr_sym_file *f)
{
	if (f->lru_prev)
		f->lru_prev->lru_next = f->lru_next;
	else
		c->lru_head = f->lru_next;
	if (f->lru_next)
		f->lru_next->lru_prev = f->lru_prev;
	else
		c->lru_tail = f->lru_prev;
	f->lru_prev = NULL;
	f->lru_next = NULL;
}

static void lru_push(struct mr_sym_file_cache *c, struct mr_sym_file *f)
{
	f->lru_next = c->lru_head;
	f->lru_prev = NULL;
	if (c->lru_head)
		c->lru_head->lru_prev = f;
	else
		c->lru_tail = f;
	c->lru_head = f;
}

/* Evicts unreferenced files, oldest first, while over the byte bound. Their
 * aliases stay behind and are dropped when next looked up. */
static void evict(struct mr_sym_file_cache *c)
{
	struct mr_sym_file *f = c->lru_tail, *prev;

	for (; f && c->bytes > c->max_bytes; f = prev) {
		prev = f->lru_prev;
		if (f->refs > 0)
			continue;
		lru_unlink(c, f);
		mr_string_map_take(c->files, f->key);
		c->bytes -= f->bytes;
		mr_sym_file_free(f);
	}
}

static struct mr_sym_file *hit(struct mr_sym_file_cache *c, struct mr_sym_file *f)
{
	c->stats.hits++;
	f->refs++;
	lru_unlink(c, f);
	lru_push(c, f);
	return f;
}

/* Follows the inode alias to a cached file, dropping stale aliases. */
static struct mr_sym_file *find_alias(struct mr_sym_file_cache *c, const char *ikey)
{
	const char *key = mr_string_map_get(c->aliases, ikey);
	struct mr_sym_file *f;

	if (!key)
		return NULL;
	f = mr_string_map_get(c->files, key);
	if (!f)
		free(mr_string_map_take(c->aliases, ikey));
	return f;
}

static void add_alias(struct mr_sym_file_cache *c, const char *ikey, const char *key)
{
	char *copy;

	if (strcmp(ikey, key) == 0 || mr_string_map_get(c->aliases, ikey))
		return;
	copy = strdup(key);
	if (copy && mr_string_map_put(c->aliases, ikey, copy) < 0)
		free(copy); /* only an optimization is lost */
}

static int insert(struct mr_sym_file_cache *c, struct mr_sym_file *f, const char *key)
{
	int rc;

	f->key = strdup(key);
	rc = f->key ? mr_string_map_put(c->files, key, f) : -ENOMEM;
	if (rc < 0) {
		mr_sym_file_free(f);
		return rc;
	}
	c->stats.parsed++;
	c->bytes += f->bytes;
	f->refs = 1;
	lru_push(c, f);
	evict(c);
	return 0;
}

/* Looks the file up by build-id, else parses it and caches it under key. */
static int probe_and_load(struct mr_sym_file_cache *c, int fd, const char *root, const char *path,
			  int64_t *budget, char *key, size_t keylen, struct mr_sym_file **out)
{
	struct mr_elf_info info;
	struct mr_sym_file *f;
	char hex[2 * MR_BUILD_ID_MAX + 1];
	Elf *e;
	int rc = mr_elf_open(fd, &e);

	if (rc < 0)
		return rc;
	rc = mr_elf_info_read(e, &info);
	if (rc == 0 && info.build_id_len > 0) {
		mr_elf_info_build_id_hex(&info, hex, sizeof(hex));
		snprintf(key, keylen, "b:%s", hex);
		f = mr_string_map_get(c->files, key);
		if (f) {
			mr_elf_info_free(&info);
			elf_end(e);
			*out = hit(c, f);
			return 0;
		}
	}
	if (rc == 0 && budget && *budget <= 0) {
		mr_elf_info_free(&info);
		rc = -EAGAIN;
	} else if (rc == 0) {
		rc = mr_sym_file_load(e, &info, root, path, &f);
		if (budget)
			(*budget)--;
	}
	elf_end(e);
	if (rc == 0)
		rc = insert(c, f, key);
	if (rc == 0)
		*out = f;
	return rc;
}

int mr_sym_file_cache_get(struct mr_sym_file_cache *c, int fd, const char *root, const char *path,
			  int64_t *budget, struct mr_sym_file **out)
{
	char ikey[128], key[2 * MR_BUILD_ID_MAX + 8];
	struct mr_sym_file *f;
	struct stat st;
	int rc;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -ENOEXEC;
	snprintf(ikey, sizeof(ikey), "i:%" PRIu64 ":%" PRIu64 ":%" PRId64 ":%" PRId64 ".%ld",
		 (uint64_t)st.st_dev, (uint64_t)st.st_ino, (int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec);
	f = find_alias(c, ikey);
	if (!f)
		f = mr_string_map_get(c->files, ikey);
	if (f) {
		*out = hit(c, f);
		return 0;
	}
	snprintf(key, sizeof(key), "%s", ikey);
	rc = probe_and_load(c, fd, root, path, budget, key, sizeof(key), out);
	if (rc == 0)
		add_alias(c, ikey, key);
	return rc;
}

void mr_sym_file_cache_ref(struct mr_sym_file *f)
{
	f->refs++;
}

void mr_sym_file_cache_put(struct mr_sym_file_cache *c, struct mr_sym_file *f)
{
	if (f->refs > 0)
		f->refs--;
	if (f->refs == 0)
		evict(c);
}

void mr_sym_file_cache_stats(const struct mr_sym_file_cache *c, struct mr_sym_file_cache_stats *out)
{
	*out = c->stats;
}
