/*
 * hlfloor: the raw-hiredis floor (bench/floor.c, libhlfloor) as a Lua
 * module, for bench/lua/luabench.lua to alternate with it in its own
 * process. Built with the Lua binding into bench/lua of the build tree.
 *
 *   local hlfloor = require "hlfloor"
 *   local f = assert(hlfloor.open(url, name))   -- or nil, why
 *   local n, elapsed = f:run(seconds)           -- pairs, seconds (or error)
 *   local g = assert(hlfloor.cmds(url, path))   -- the grid's floor
 *                                               -- (floor.h hlfloor_cmds)
 *   local n, elapsed = g:run(seconds)           -- rounds, seconds
 *   g:once()                                    -- one round, one call from Lua
 *   hlfloor.now()                               -- CLOCK_MONOTONIC seconds
 */
#include "../floor.h"

#include <lauxlib.h>
#include <lua.h>

#define FLOOR_MT "hlfloor.floor"

static hlfloor **check_floor(lua_State *L)
{
	hlfloor **f = luaL_checkudata(L, 1, FLOOR_MT);
	if (*f == NULL)
		luaL_error(L, "hlfloor: closed");
	return f;
}

static int l_open(lua_State *L)
{
	const char *url = luaL_checkstring(L, 1);
	const char *name = luaL_checkstring(L, 2);
	char err[256];
	hlfloor **f = lua_newuserdatauv(L, sizeof(*f), 0);
	*f = NULL;
	luaL_setmetatable(L, FLOOR_MT);
	*f = hlfloor_open(url, name, err, sizeof(err));
	if (*f == NULL) {
		lua_pushnil(L);
		lua_pushstring(L, err);
		return 2;
	}
	return 1;
}

static int l_run(lua_State *L)
{
	hlfloor **f = check_floor(L);
	double seconds = luaL_checknumber(L, 2), elapsed = 0;
	long long n = hlfloor_run(*f, seconds, &elapsed);
	if (n < 0)
		return luaL_error(L, "%s", hlfloor_error(*f));
	lua_pushinteger(L, (lua_Integer)n);
	lua_pushnumber(L, elapsed);
	return 2;
}

static int l_close(lua_State *L)
{
	hlfloor **f = luaL_checkudata(L, 1, FLOOR_MT);
	hlfloor_close(*f);
	*f = NULL;
	return 0;
}

#define CMDS_MT "hlfloor.cmds"

static int l_cmds(lua_State *L)
{
	const char *url = luaL_checkstring(L, 1);
	const char *path = luaL_checkstring(L, 2);
	char err[256];
	hlfloor_cmds **f = lua_newuserdatauv(L, sizeof(*f), 0);
	*f = NULL;
	luaL_setmetatable(L, CMDS_MT);
	*f = hlfloor_cmds_open(url, path, err, sizeof(err));
	if (*f == NULL) {
		lua_pushnil(L);
		lua_pushstring(L, err);
		return 2;
	}
	return 1;
}

static int l_cmds_run(lua_State *L)
{
	hlfloor_cmds **f = luaL_checkudata(L, 1, CMDS_MT);
	double seconds = luaL_checknumber(L, 2), elapsed = 0;
	long long n;
	if (*f == NULL)
		return luaL_error(L, "hlfloor: closed");
	n = hlfloor_cmds_run(*f, seconds, &elapsed);
	if (n < 0)
		return luaL_error(L, "%s", hlfloor_cmds_error(*f));
	lua_pushinteger(L, (lua_Integer)n);
	lua_pushnumber(L, elapsed);
	return 2;
}

/* One round, from Lua: what a call into C costs each operation. */
static int l_cmds_once(lua_State *L)
{
	hlfloor_cmds **f = luaL_checkudata(L, 1, CMDS_MT);
	if (*f == NULL)
		return luaL_error(L, "hlfloor: closed");
	if (hlfloor_cmds_once(*f) != 0)
		return luaL_error(L, "%s", hlfloor_cmds_error(*f));
	return 0;
}

static int l_cmds_close(lua_State *L)
{
	hlfloor_cmds **f = luaL_checkudata(L, 1, CMDS_MT);
	hlfloor_cmds_close(*f);
	*f = NULL;
	return 0;
}

static int l_now(lua_State *L)
{
	lua_pushnumber(L, hlfloor_now());
	return 1;
}

int luaopen_hlfloor(lua_State *L);

int luaopen_hlfloor(lua_State *L)
{
	static const luaL_Reg methods[] = {{"run", l_run},
	                                   {"close", l_close},
	                                   {"__gc", l_close},
	                                   {NULL, NULL}};
	static const luaL_Reg cmds_methods[] = {{"run", l_cmds_run},
	                                        {"once", l_cmds_once},
	                                        {"close", l_cmds_close},
	                                        {"__gc", l_cmds_close},
	                                        {NULL, NULL}};
	static const luaL_Reg funcs[] = {{"open", l_open},
	                                 {"cmds", l_cmds},
	                                 {"now", l_now},
	                                 {NULL, NULL}};
	luaL_newmetatable(L, CMDS_MT);
	luaL_setfuncs(L, cmds_methods, 0);
	lua_pushvalue(L, -1);
	lua_setfield(L, -2, "__index");
	lua_pop(L, 1);
	luaL_newmetatable(L, FLOOR_MT);
	luaL_setfuncs(L, methods, 0);
	lua_pushvalue(L, -1);
	lua_setfield(L, -2, "__index");
	lua_pop(L, 1);
	luaL_newlib(L, funcs);
	return 1;
}
