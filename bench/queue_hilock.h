/*
 * hilock's C blocking queue for hlqueue (bench/queue.c), in one place so
 * its calls are easy to adapt: bench/CMakeLists.txt compiles queue_hilock.c
 * with HLQ_REAL only when a probe build of it against the installed
 * headers succeeds (the blocking_queue kind is there); otherwise the stubs
 * below say "not built".
 */
#ifndef HL_BENCH_QUEUE_HILOCK_H
#define HL_BENCH_QUEUE_HILOCK_H

#include <stddef.h>

int hlq_built(void);
const char *hlq_why(void);
/* A client and blocking queue NAME of its own. NULL, and why in err. */
void *hlq_open(const char *url, const char *name, char *err, size_t err_len);
int hlq_offer(void *q, const char *v, size_t len, char *err, size_t err_len);
/* take(): the element into buf (NUL-terminated), its length; -1 and err. */
long hlq_take(void *q, char *buf, size_t cap, char *err, size_t err_len);
void hlq_close(void *q);

#endif
