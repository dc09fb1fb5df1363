# Turns the preprocessed api.h (IN) into a C file (OUT) that returns it as a
# string, so that Lua's ffi.cdef always matches the header the runtime was built from.
file(READ ${IN} text)
string(REGEX REPLACE "\n[ \t]*\n+" "\n" text "${text}")
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "\n" "\\n\"\n\"" text "${text}")
file(WRITE ${OUT} "/* generated from runtime/api.h by scripts/cmake/embed_cdef.cmake */\n"
  "#include \"api_cdef.h\"\n\n"
  "const char *mr_api_cdef(void)\n{\n\treturn \"${text}\";\n}\n")
