/* sym_vdso.h - the kernel's vDSO as a file the symbolizer can parse: every
 * 64-bit process maps the same image, so this process's copy names the
 * [vdso] frames of all of them. */
#ifndef MR_SYMBOLS_SYM_VDSO_H
#define MR_SYMBOLS_SYM_VDSO_H

/* Returns a memfd holding this process's vDSO ELF image, or a negative errno. */
int mr_sym_vdso_memfd(void);

#endif
