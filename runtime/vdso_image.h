/* vdso_image.h - the kernel's vDSO as a file the symbolizer can parse: every
 * 64-bit process maps the same image, so this process's copy names the
 * [vdso] frames of all of them. */
#ifndef MR_VDSO_IMAGE_H
#define MR_VDSO_IMAGE_H

/* Returns a memfd holding this process's vDSO ELF image, or a negative errno. */
int mr_vdso_memfd(void);

#endif
