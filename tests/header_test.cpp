/* The header test as C++: the same checks (header_test.c is C++-clean). */
#include "header_test.c"
