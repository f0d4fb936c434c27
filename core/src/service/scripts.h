/*
 * The Lua scripts of the lock family (scripts.c). Private, but free of the
 * core's other internals, so that bench/ can compile scripts.c and its
 * floor program sends the very same scripts.
 */
#ifndef HL_SCRIPTS_H
#define HL_SCRIPTS_H

enum hl_script_id {
	HL_SCRIPT_ACQUIRE = 0,
	HL_SCRIPT_RELEASE,
	HL_SCRIPT_FORCE_UNLOCK,
	HL_SCRIPT_RENEW,
	HL_SCRIPT_COUNT
};

typedef struct hl_script {
	const char *name;
	const char *source;
} hl_script;

const hl_script *hl__script(enum hl_script_id id);

#endif
