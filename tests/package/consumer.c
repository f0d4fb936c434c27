/* Built against an installed libhilock, through find_package(hilock) and
 * through pkg-config, shared and static: proves the installed header,
 * libraries, hilock.pc and CMake package are usable (the static archive
 * with its dependencies, OpenSSL among them) and agree on the version. */
#include <hilock.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
	if (hl_version_number() != HL_VERSION_NUMBER ||
	    strcmp(hl_version(), HL_VERSION_STRING) != 0) {
		fprintf(stderr, "header %s but library %s\n", HL_VERSION_STRING,
		        hl_version());
		return 1;
	}
	if (strcmp(hl_status_name(HL_ENOTHELD), "HL_ENOTHELD") != 0)
		return 1;
	{
		/* TLS is built in (and, linked statically, OpenSSL came
		 * along): a rediss client with a CA file that does not exist
		 * fails on that file, before any connection. */
		hl_client_options o = HL_CLIENT_OPTIONS_INIT;
		hl_client *c = NULL;
		int rc;
		o.tls_ca_file = "/nonexistent/hilock-ca.pem";
		rc = hl_client_new(&c, "rediss://127.0.0.1:1", &o);
		if (rc != HL_EINVAL ||
		    !strstr(hl_error_last(), "tls_ca_file")) {
			fprintf(stderr, "rediss client: %s: %s\n",
			        hl_status_name(rc), hl_error_last());
			return 1;
		}
	}
	printf("consumer: libhilock %s\n", hl_version());
	return 0;
}
