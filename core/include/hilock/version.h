/*
 * hilock version. CMake parses the three numbers below; keep their shape.
 */
#ifndef HILOCK_VERSION_H
#define HILOCK_VERSION_H

#define HL_VERSION_MAJOR  0
#define HL_VERSION_MINOR  1
#define HL_VERSION_PATCH  0
#define HL_VERSION_STRING "0.1.0"

/* major * 10000 + minor * 100 + patch */
#define HL_VERSION_NUMBER                                                      \
	(HL_VERSION_MAJOR * 10000 + HL_VERSION_MINOR * 100 + HL_VERSION_PATCH)

#endif
