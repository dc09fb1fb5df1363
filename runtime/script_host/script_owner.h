/* script_owner.h - what scripts opened through the runtime (profilers, profiles,
 * transports). A script interrupted mid-call has its Lua state abandoned, so
 * its finalizers never run: the agent closes what it owned instead. */
#ifndef MR_SCRIPT_HOST_SCRIPT_OWNER_H
#define MR_SCRIPT_HOST_SCRIPT_OWNER_H

struct mr_script;

typedef void (*mr_script_owner_close_fn)(void *obj);

/* The script whose code is running now (NULL outside script calls). */
void mr_script_owner_set_running(struct mr_script *s);
struct mr_script *mr_script_owner_running(void);
/* Records obj as opened by the running script, if any. Returns 0, or
 * -ENOMEM (then obj is simply not tracked). */
int mr_script_owner_add(void *obj, mr_script_owner_close_fn close);
/* Forgets obj (its close function calls this first). */
void mr_script_owner_remove(void *obj);
/* Closes everything s still owns. */
void mr_script_owner_close_all(struct mr_script *s);

#endif
