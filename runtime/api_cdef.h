/* api_cdef.h - bootstrap of the FFI: hands Lua the preprocessed text of api.h.
 * Lua declares this one function by hand and everything else from its result. */
#ifndef MR_API_CDEF_H
#define MR_API_CDEF_H

__attribute__((visibility("default"))) const char *mr_api_cdef(void);

#endif
