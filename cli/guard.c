/* guard.c - what main() does before any command runs, for any command:
 * the standard descriptors opened when closed, and the fatal signal
 * guard that turns a damaged store's faults into one line and an exit
 * code (cli.h). */
#include "cli/cli.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define PGATE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PGATE_ASAN 1
#endif
#endif
#ifdef PGATE_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

/* ---- the fatal signal guard (cli.h) ---- */

static const int guard_signals[] = { SIGSEGV, SIGBUS, SIGABRT, SIGFPE,
				     SIGILL };

/* Filled before the handlers are installed: the handler only reads it. */
static struct {
	int fd;
	int code;
	char head[512];
	size_t head_len;
	char tail[1024];
	size_t tail_len;
	gboolean armed;
	struct sigaction saved[G_N_ELEMENTS(guard_signals)];
} guard;

static void
guard_write(const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(guard.fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

/* Async-signal-safe: write(2) and _exit(2) only. */
static void
guard_handler(int sig)
{
	const char *name = sig == SIGSEGV ? "SIGSEGV"
			   : sig == SIGBUS ? "SIGBUS"
			   : sig == SIGABRT ? "SIGABRT"
			   : sig == SIGFPE ? "SIGFPE" : "SIGILL";

	guard_write(guard.head, guard.head_len);
	guard_write(name, strlen(name));
	guard_write(guard.tail, guard.tail_len);
	_exit(guard.code);
}

static size_t
copy_bounded(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return n;
}

void
pgate_cli_guard_arm(int fd, const char *head, const char *tail, int code)
{
	struct sigaction sa;

	guard.fd = fd;
	guard.code = code;
	guard.head_len = copy_bounded(guard.head, sizeof guard.head, head);
	guard.tail_len = copy_bounded(guard.tail, sizeof guard.tail, tail);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = guard_handler;
	sigfillset(&sa.sa_mask);
	/* a fault in the handler itself kills, as it would have */
	sa.sa_flags = SA_RESETHAND;
	for (gsize i = 0; i < G_N_ELEMENTS(guard_signals); i++)
		sigaction(guard_signals[i], &sa,
			  guard.armed ? NULL : &guard.saved[i]);
	guard.armed = TRUE;
}

void
pgate_cli_guard_disarm(void)
{
	if (!guard.armed)
		return;
	for (gsize i = 0; i < G_N_ELEMENTS(guard_signals); i++)
		sigaction(guard_signals[i], &guard.saved[i], NULL);
	guard.armed = FALSE;
}

/* Arms the guard for @command, which uses the store in @state_dir. */
void
pgate_cli_guard_command(const char *command, CmdFlags flags, const char *state_dir)
{
	g_autofree char *dir = g_build_filename(state_dir, PGATE_STATE_STORE, NULL);
	g_autofree char *head = g_strdup_printf("patchgate: %s: ", command);
	g_autofree char *tail = g_strdup_printf(
		" while using the store %s, which is probably damaged; run "
		"'patchgate store verify'%s\n", dir,
		(flags & CMD_TEMPFAIL) ? " (exit 75: the mail is kept for a "
					 "retry)" : "");

	pgate_cli_guard_arm(STDERR_FILENO, head, tail,
			    (flags & CMD_TEMPFAIL) ? EX_TEMPFAIL : EX_DATAERR);
#ifdef PGATE_ASAN
	/* an error a sanitizer reports (it aborts after) is a bug here, not
	 * a damaged store: it must not end as 65 or 75 */
	__sanitizer_set_death_callback(pgate_cli_guard_disarm);
#endif
}

/* A closed 0, 1 or 2 would be taken by the next file opened: write.lock
 * read as the message to deliver, an error line written into lock.mdb.
 * Each that is closed is opened on /dev/null (in order, so that open()
 * returns that very descriptor). */
gboolean
pgate_cli_std_fds_open(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		int n;

		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		n = open("/dev/null", O_RDWR);
		if (n < 0)
			return FALSE;
		if (n != fd) {
			if (dup2(n, fd) < 0)
				return FALSE;
			close(n);
		}
	}
	return TRUE;
}

