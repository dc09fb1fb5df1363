/* sym_demangle.c - wraps libiberty's cplus_demangle (auto-detected C++,
 * Rust legacy and Rust v0 mangling) and drops leftover Rust hashes. */
#include "symbols/sym_demangle.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <demangle.h>
#include <string.h>

#define RUST_HASH_LEN 19 /* "::h" and 16 hex digits */
#define PLT_SUFFIX "@plt"

static void strip_rust_hash(char *s)
{
	size_t len = strlen(s);
	char *h;

	if (len <= RUST_HASH_LEN)
		return;
	h = s + len - RUST_HASH_LEN;
	if (strncmp(h, "::h", 3) != 0)
		return;
	for (size_t i = 3; i < RUST_HASH_LEN; i++) {
		if (!isxdigit((unsigned char)h[i]))
			return;
	}
	*h = '\0';
}

/* "memcpy@@GLIBC_2.14" -> "memcpy": the version is not part of the name. */
static char *strip_version(const char *name)
{
	const char *at = strchr(name + 1, '@');

	return at ? strndup(name, (size_t)(at - name)) : strdup(name);
}

static char *demangle(const char *name)
{
	char *plain = strip_version(name), *out;

	if (!plain || plain[0] != '_')
		return plain;
	out = cplus_demangle(plain, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	if (!out)
		return plain;
	free(plain);
	strip_rust_hash(out);
	return out;
}

/* A PLT stub's name ("_ZN3foo3barEv@plt", see sym_plt.c) keeps its suffix
 * around the readable form of what it calls. */
char *mr_sym_demangle(const char *name)
{
	size_t len = strlen(name), slen = strlen(PLT_SUFFIX);
	char *base, *out;

	if (len <= slen || strcmp(name + len - slen, PLT_SUFFIX) != 0)
		return demangle(name);
	base = strndup(name, len - slen);
	out = base ? demangle(base) : NULL;
	free(base);
	if (out && asprintf(&base, "%s" PLT_SUFFIX, out) < 0)
		base = NULL;
	free(out);
	return base;
}
