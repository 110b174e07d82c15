# Writes the bytes of a class file as a C++ source defining the array NAME
# and NAME_size: cmake -DIN=.. -DOUT=.. -DNAME=.. -P embed_class.cmake
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE ${OUT} "// Generated from ${IN} by embed_class.cmake.\n#include <cstddef>\n#include <cstdint>\nextern const uint8_t ${NAME}[];\nextern const size_t ${NAME}_size;\nconst uint8_t ${NAME}[] = {${body}};\nconst size_t ${NAME}_size = sizeof(${NAME});\n")
