/*
 * The raw-hiredis floor of an uncontended lock+unlock pair: one hiredis
 * connection, EVALSHA of the core's own acquire and release scripts
 * (core/src/service/scripts.c compiled in, loaded with SCRIPT LOAD) with the
 * arguments the core sends, no library logic.
 *
 * One copy for every language: hlbench compiles it in, and the shared
 * library libhlfloor (this file and scripts.c) is what the bindings'
 * benchmarks load into their own process (bench/py/pybench.py with ctypes;
 * bench/lua/luabench.lua through the Lua module hlfloor, bench/lua/
 * hlfloor_lua.c), so each alternates with the very same C floor in one
 * process, as hlbench's paired scenario does for C.
 */
#ifndef HL_BENCH_FLOOR_H
#define HL_BENCH_FLOOR_H

#include <hiredis/hiredis.h>

#include <stddef.h>

typedef struct hlfloor hlfloor;

/* A hiredis connection to a redis://host[:port][/db] URL. NULL, and why
 * in err, when it cannot be made. */
redisContext *hlfloor_connect(const char *url, char *err, size_t err_len);

/* The floor on lock name over its own connection (scripts loaded). NULL,
 * and why in err. */
hlfloor *hlfloor_open(const char *url, const char *name, char *err,
                      size_t err_len);
/* Its connection (for other commands between pairs, such as PING). */
redisContext *hlfloor_context(hlfloor *f);
/* One pair: the acquire script takes the lock, the release script frees
 * it. 0, or -1 with why in hlfloor_error(). */
int hlfloor_pair(hlfloor *f);
/* Pairs until seconds have passed: how many (-1 on failure), and the time
 * they took in *elapsed_s. */
long long hlfloor_run(hlfloor *f, double seconds, double *elapsed_s);
const char *hlfloor_error(const hlfloor *f);
void hlfloor_close(hlfloor *f);

/* The grid's floor (bench run.py's grid group): the commands one grid
 * operation sends, as hilock sent them (captured with MONITOR by hlbench
 * grid-capture), replayed over one hiredis connection: every command
 * appended, then every reply read (one round trip when hilock sends one
 * command). The file holds one command a line, its arguments hex-encoded
 * and separated by spaces ("=" for an empty one). A line "! now I" or
 * "! id I" after a command makes its argument I fresh in every round, as
 * hilock makes it fresh in every call: the wall clock in ms, or 16 bytes
 * no round used before (a rate limiter's grant: a replayed id would only
 * find the first round's grant). A script's EVALSHA needs the script in
 * Redis's cache: the capture left it there. */
typedef struct hlfloor_cmds hlfloor_cmds;

hlfloor_cmds *hlfloor_cmds_open(const char *url, const char *path, char *err,
                                size_t err_len);
/* One round: 0, or -1 with why in hlfloor_cmds_error() (an error reply
 * fails too). */
int hlfloor_cmds_once(hlfloor_cmds *f);
/* Rounds until seconds have passed: how many (-1 on failure), the time
 * they took in *elapsed_s. */
long long hlfloor_cmds_run(hlfloor_cmds *f, double seconds, double *elapsed_s);
const char *hlfloor_cmds_error(const hlfloor_cmds *f);
void hlfloor_cmds_close(hlfloor_cmds *f);

/* CLOCK_MONOTONIC in seconds (Lua has no sub-second wall clock). */
double hlfloor_now(void);

#endif
