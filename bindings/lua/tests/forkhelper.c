/*
 * forkhelper: a Lua 5.4 module for test_faults.lua only. Lua's standard
 * library cannot fork, and Debian's lua-posix is not built for Lua 5.4, so
 * run-tests.sh compiles this into its temporary directory:
 *
 *   fork()             the child's pid in the parent, 0 in the child
 *   wait(pid, secs)    the child's exit status (0-255), or nil, "signal N";
 *                      after secs it is killed (SIGKILL) and nil, "timeout"
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

static int l_fork(lua_State *L)
{
	pid_t pid;

	fflush(NULL); /* nothing buffered is written twice */
	pid = fork();
	if (pid < 0)
		return luaL_error(L, "fork: %s", strerror(errno));
	lua_pushinteger(L, (lua_Integer)pid);
	return 1;
}

static int l_wait(lua_State *L)
{
	pid_t pid = (pid_t)luaL_checkinteger(L, 1);
	double secs = luaL_checknumber(L, 2);
	long rounds = (long)(secs * 100.0) + 1;
	struct timespec ten_ms = {0, 10 * 1000 * 1000};
	int status = 0;
	pid_t got;

	while ((got = waitpid(pid, &status, WNOHANG)) == 0 && rounds-- > 0)
		nanosleep(&ten_ms, NULL);
	if (got == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		lua_pushnil(L);
		lua_pushliteral(L, "timeout");
		return 2;
	}
	if (got < 0)
		return luaL_error(L, "waitpid: %s", strerror(errno));
	if (WIFEXITED(status)) {
		lua_pushinteger(L, WEXITSTATUS(status));
		return 1;
	}
	lua_pushnil(L);
	lua_pushfstring(L, "signal %d",
	                WIFSIGNALED(status) ? WTERMSIG(status) : -1);
	return 2;
}

int luaopen_forkhelper(lua_State *L)
{
	static const luaL_Reg fns[] = {
	        {"fork", l_fork}, {"wait", l_wait}, {NULL, NULL}};

	luaL_newlib(L, fns);
	return 1;
}
