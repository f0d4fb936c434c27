#!/bin/sh
# INPUT_FILTER for doxygen (docs/Doxyfile): hilock.h documents each
# declaration with a plain C comment above it and each struct field with
# one after it. Make those doxygen comments, as doxygen reads the file:
#   - the file's opening comment becomes the \file page;
#   - "/* ---...---" banners (section titles) stay plain comments;
#   - a comment that starts a line becomes "/**" (documents what follows);
#   - a comment after code on the same line becomes "/**<" (documents
#     what precedes it: struct fields).
# Prints the result on stdout; the header is not changed.
exec awk '
NR == 1 && /^\/\*$/ { print "/** \\file"; next }
/^[ \t]*\/\* *-----/ { print; next }
/^[ \t]*\/\*[^*]/ || /^[ \t]*\/\*$/ { sub(/\/\*/, "/**"); print; next }
/[^ \t][ \t]+\/\*[^*]/ { sub(/\/\*/, "/**<"); print; next }
!/^[ \t]*#/ { gsub(/ #/, " \\#") }
{ print }
' "$1"
