# embed_text.cmake - turn a text file into a C array, so that C source the
# code generator carries (src/codegen/kiln_vmath.h) stays a real file that
# tests include and readers open, and is still inside the library.
#   cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed_text.cmake
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
get_filename_component(base "${IN}" NAME)
file(WRITE "${OUT}" "/* Generated from ${base} by cmake/embed_text.cmake. */\nconst char ${NAME}[] = {\n${bytes}0x00};\n")
