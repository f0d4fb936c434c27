/* Print a TCP port on 127.0.0.1 that is free right now (the kernel picks it
 * when we bind port 0). The test runner starts redis-server on it and retries
 * with a new port if someone else took it in between. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
	struct sockaddr_in addr;
	socklen_t len = sizeof(addr);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0) {
		perror("socket");
		return 1;
	}
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = 0;
	if (bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
		perror("bind");
		close(fd);
		return 1;
	}
	printf("%u\n", (unsigned)ntohs(addr.sin_port));
	close(fd);
	return 0;
}
