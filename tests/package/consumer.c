/* Built against an installed libhilock, through find_package(hilock) and
 * through pkg-config: proves the installed header, library, hilock.pc and
 * CMake package are usable and agree on the version. */
#include <hilock.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	if (hl_version_number() != HL_VERSION_NUMBER ||
	    strcmp(hl_version(), HL_VERSION_STRING) != 0) {
		fprintf(stderr, "header %s but library %s\n",
		        HL_VERSION_STRING, hl_version());
		return 1;
	}
	if (strcmp(hl_status_name(HL_ENOTHELD), "HL_ENOTHELD") != 0)
		return 1;
	printf("consumer: libhilock %s\n", hl_version());
	return 0;
}
