# Turns a preprocessed api header (IN) into a C file (OUT) with a function
# NAME() that returns it as a string, so that Lua's ffi.cdef always matches
# the header the runtime was built from.
file(READ ${IN} text)
string(REGEX REPLACE "\n[ \t]*\n+" "\n" text "${text}")
string(REPLACE "\\" "\\\\" text "${text}")
string(REPLACE "\"" "\\\"" text "${text}")
string(REPLACE "\n" "\\n\"\n\"" text "${text}")
file(WRITE ${OUT} "/* generated from ${HEADER} by scripts/cmake/embed_cdef.cmake */\n"
  "#include \"entry.h\"\n\n"
  "const char *${NAME}(void)\n{\n\treturn \"${text}\";\n}\n")
