# Turns a binary file (IN) into a C file (OUT) with a function NAME(size_t *len)
# that returns its bytes, so the runtime carries them without a data file.
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR size "${hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n\t" bytes "${bytes}")
file(WRITE ${OUT} "/* generated from ${IN} by scripts/cmake/embed_bytes.cmake */\n"
  "#include <stddef.h>\n\n"
  "static const unsigned char data[${size}] = {\n\t${bytes}\n};\n\n"
  "__attribute__((visibility(\"default\"))) const void *${NAME}(size_t *len);\n\n"
  "const void *${NAME}(size_t *len)\n{\n\t*len = sizeof(data);\n\treturn data;\n}\n")
