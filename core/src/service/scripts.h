/*
 * The Lua scripts of the lock family (scripts.c), one section per kind. Private, but free of the
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
	HL_SCRIPT_FENCED_ACQUIRE,
	HL_SCRIPT_FAIR_ACQUIRE,
	HL_SCRIPT_FAIR_RELEASE,
	HL_SCRIPT_FAIR_FORCE_UNLOCK,
	HL_SCRIPT_FAIR_GIVE_UP,
	HL_SCRIPT_READ_ACQUIRE,
	HL_SCRIPT_READ_RELEASE,
	HL_SCRIPT_WRITE_ACQUIRE,
	HL_SCRIPT_WRITE_RELEASE,
	HL_SCRIPT_RW_FORCE_UNLOCK,
	HL_SCRIPT_RW_IS_LOCKED,
	HL_SCRIPT_COUNT
};

typedef struct hl_script {
	const char *name;
	const char *source;
} hl_script;

const hl_script *hl__script(enum hl_script_id id);

#endif
