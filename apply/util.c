/* util.c - libgit2 set-up and error translation, git's ident and UTF-8
 * clean-ups, and git's path rules. */
#include "apply/apply-private.h"

#include <dlfcn.h>
#include <malloc.h>
#include <string.h>

/* ---- deferred CA certificates ------------------------------------------
 *
 * libgit2 1.5 built with mbedtls (Debian's) parses the system's whole CA
 * bundle in git_libgit2_init(): some 55 million instructions, a third of
 * what `patchgate apply` of a ten-patch series costs, for certificates
 * that only an https push reads.  The function below takes the place of
 * mbedtls's own for libgit2 when the executable exports it (apply_dep's
 * link arguments, apply/meson.build): while git_libgit2_init() runs it
 * only notes which chain was to get which file; pgate_apply__git_tls()
 * parses them into those same chains before an https push.  Any other
 * call goes to mbedtls, and makes what was noted moot (libgit2 replaced
 * its chain).  A libgit2 without mbedtls never calls it; an executable
 * that does not export it gets mbedtls's, and the certificates at once,
 * as before. */

typedef struct {
	void *chain;    /* mbedtls_x509_crt *, which libgit2 keeps */
	char *path;
} CertLoad;

static GMutex certs_lock;
static gboolean certs_defer;      /* during git_libgit2_init() */
static GArray *certs_pending;     /* CertLoad */

typedef int (*ParseFileFunc)(void *chain, const char *path);

static ParseFileFunc
real_parse_file(void)
{
	static gsize fn;

	if (g_once_init_enter(&fn)) {
		void *p = dlsym(RTLD_NEXT, "mbedtls_x509_crt_parse_file");

		g_once_init_leave(&fn, (gsize)p);
	}
	return (ParseFileFunc)fn;
}

static void
cert_load_clear(gpointer p)
{
	g_free(((CertLoad *)p)->path);
}

int mbedtls_x509_crt_parse_file(void *chain, const char *path);

int
mbedtls_x509_crt_parse_file(void *chain, const char *path)
{
	ParseFileFunc real;

	g_mutex_lock(&certs_lock);
	if (certs_defer) {
		CertLoad l = { chain, g_strdup(path) };

		if (certs_pending == NULL) {
			certs_pending = g_array_new(FALSE, FALSE, sizeof(CertLoad));
			g_array_set_clear_func(certs_pending, cert_load_clear);
		}
		g_array_append_val(certs_pending, l);
		g_mutex_unlock(&certs_lock);
		return 0;
	}
	g_clear_pointer(&certs_pending, g_array_unref);
	g_mutex_unlock(&certs_lock);
	real = real_parse_file();
	return real ? real(chain, path) : -1;
}

gboolean
pgate_apply__git_tls(GError **error)
{
	ParseFileFunc real = real_parse_file();
	g_autoptr(GArray) pending = NULL;
	gboolean ok = TRUE;

	pgate_apply__git_init();
	/* under the lock: a second push waits for the chains to be full
	 * (a failure leaves them empty: TLS then fails, it never trusts
	 * more) */
	g_mutex_lock(&certs_lock);
	pending = g_steal_pointer(&certs_pending);
	for (guint i = 0; ok && pending != NULL && i < pending->len; i++) {
		const CertLoad *l = &g_array_index(pending, CertLoad, i);

		if (real == NULL || real(l->chain, l->path) < 0) {
			g_set_error(error, PGATE_APPLY_ERROR, PGATE_ERROR_CONFIG,
				    "cannot load the CA certificates of %s",
				    l->path);
			ok = FALSE;
		}
	}
	g_mutex_unlock(&certs_lock);
	return ok;
}

gboolean
pgate_apply__git_tls_deferred(void)
{
	gboolean pending;

	g_mutex_lock(&certs_lock);
	pending = certs_pending != NULL && certs_pending->len > 0;
	g_mutex_unlock(&certs_lock);
	return pending;
}

void
pgate_apply__git_init(void)
{
	static gsize done;

	if (g_once_init_enter(&done)) {
		g_mutex_lock(&certs_lock);
		certs_defer = TRUE;
		g_mutex_unlock(&certs_lock);
		git_libgit2_init();
		g_mutex_lock(&certs_lock);
		certs_defer = FALSE;
		g_mutex_unlock(&certs_lock);
		/* libgit2 hashes every object it reads again to check it,
		 * which git does not do on these paths: a third of an
		 * apply's instructions went to SHA-1 over trees read from
		 * packs, again and again, as only trees under 4 KiB are
		 * cached (a directory of 400 files is 16 KiB) */
		git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, 0);
		git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, GIT_OBJECT_TREE,
				 (size_t)(1u << 20));
		/* glibc gives the top of the heap back past 128 KiB free, and
		 * applying a series frees and takes more than that again and
		 * again: 270 brk calls and a thousand page faults, more time
		 * than the CA bundle cost (whose parse used to raise these
		 * thresholds as a side effect).  Process-wide, and harmless
		 * to the daemon: a few MiB stay mapped. */
		mallopt(M_TRIM_THRESHOLD, 8 << 20);
		mallopt(M_MMAP_THRESHOLD, 1 << 20);
		g_once_init_leave(&done, 1);
	}
}

gboolean
pgate_apply__git_error(GError **error, int rc, const char *what)
{
	const git_error *e = git_error_last();
	PgateErrorCode code = PGATE_ERROR_FAILED;

	if (rc == GIT_ENOTFOUND)
		code = PGATE_ERROR_NOT_FOUND;
	else if (e != NULL && (e->klass == GIT_ERROR_OS ||
			       e->klass == GIT_ERROR_NOMEMORY))
		code = PGATE_ERROR_IO;
	g_set_error(error, PGATE_APPLY_ERROR, code, "%s: %s", what,
		    e && e->message ? e->message : "libgit2 error");
	return FALSE;
}

static gboolean
crud(guchar c)
{
	return c <= 32 || c == '.' || c == ',' || c == ':' || c == ';' ||
	       c == '<' || c == '>' || c == '"' || c == '\\' || c == '\'';
}

char *
pgate_apply__strip_crud(const char *s)
{
	gsize len;
	GString *out;

	while (*s && crud((guchar)*s))
		s++;
	len = strlen(s);
	while (len > 0 && crud((guchar)s[len - 1]))
		len--;
	out = g_string_sized_new(len);
	for (gsize i = 0; i < len; i++)
		if (s[i] != '\n' && s[i] != '<' && s[i] != '>')
			g_string_append_c(out, s[i]);
	return g_string_free(out, FALSE);
}

/* the offset of the first byte that does not start valid UTF-8 as git
 * sees it (no overlong forms, surrogates or non-characters), or -1 */
static gssize
find_invalid_utf8(const guchar *buf, gsize len)
{
	static const guint32 max_cp[] = { 0x7f, 0x7ff, 0xffff, 0x10ffff };
	gsize off = 0;

	while (off < len) {
		guchar c = buf[off];
		gsize bad = off;
		int bytes = 0;
		guint32 cp;

		off++;
		if (c < 0x80)
			continue;
		while (c & 0x40) {
			c <<= 1;
			bytes++;
		}
		if (bytes < 1 || bytes > 3 || len - off < (gsize)bytes)
			return bad;
		cp = (guchar)(c & 0x7f) >> bytes;
		for (int i = 0; i < bytes; i++, off++) {
			if ((buf[off] & 0xc0) != 0x80)
				return bad;
			cp = (cp << 6) | (buf[off] & 0x3f);
		}
		if (cp < max_cp[bytes - 1] + 1 || cp > max_cp[bytes])
			return bad;
		if ((cp & 0x1ff800) == 0xd800 || (cp & 0xfffe) == 0xfffe ||
		    (cp >= 0xfdd0 && cp <= 0xfdef))
			return bad;
	}
	return -1;
}

char *
pgate_apply__fix_utf8(const char *s, gsize len)
{
	GString *out = g_string_sized_new(len + 8);
	gsize pos = 0;

	for (;;) {
		gssize bad = find_invalid_utf8((const guchar *)s + pos, len - pos);
		guchar c;

		if (bad < 0) {
			g_string_append_len(out, s + pos, len - pos);
			break;
		}
		g_string_append_len(out, s + pos, bad);
		c = s[pos + bad];
		g_string_append_c(out, (char)(0xc0 + (c >> 6)));
		g_string_append_c(out, (char)(0x80 + (c & 0x3f)));
		pos += bad + 1;
	}
	return g_string_free(out, FALSE);
}

/* Code points HFS+ ignores when it compares names (git's
 * next_hfs_char()): ".git" spelt with them is ".git" on a Mac. */
static gboolean
hfs_ignorable(gunichar u)
{
	return (u >= 0x200c && u <= 0x200f) || (u >= 0x202a && u <= 0x202e) ||
	       (u >= 0x206a && u <= 0x206f) || u == 0xfeff;
}

/* Whether one path component is ".git" to some file system: any case,
 * NTFS trailing dots and spaces or an ":stream", the 8.3 name "git~1",
 * HFS+ ignorable code points. */
static gboolean
is_dotgit(const char *c, gsize n)
{
	g_autofree char *comp = g_strndup(c, n);
	GString *hfs;
	gsize end;
	gboolean res;

	if (g_ascii_strncasecmp(comp, "git~1", 5) == 0 && n == 5)
		return TRUE;
	if (n >= 4 && g_ascii_strncasecmp(comp, ".git", 4) == 0) {
		/* NTFS: ".git" followed by dots and spaces, or by ':' */
		end = 4;
		while (end < n && (comp[end] == '.' || comp[end] == ' '))
			end++;
		if (end == n || comp[end] == ':')
			return TRUE;
	}
	if (!g_utf8_validate(comp, n, NULL))
		return FALSE;
	hfs = g_string_new(NULL);
	for (const char *p = comp; *p; p = g_utf8_next_char(p)) {
		gunichar u = g_utf8_get_char(p);

		if (!hfs_ignorable(u))
			g_string_append_unichar(hfs, u);
	}
	res = g_ascii_strcasecmp(hfs->str, ".git") == 0;
	g_string_free(hfs, TRUE);
	return res;
}

const char *
pgate_apply__bad_path(const char *path)
{
	const char *p = path, *slash;

	if (path == NULL || *path == '\0')
		return "empty path";
	if (*path == '/')
		return "absolute path";
	for (;;) {
		gsize n;

		slash = strchr(p, '/');
		n = slash ? (gsize)(slash - p) : strlen(p);
		if (n == 0)
			return "empty path component";
		if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return "path escapes the tree";
		if (is_dotgit(p, n))
			return "path names the .git directory";
		if (slash == NULL)
			break;
		p = slash + 1;
	}
	return NULL;
}
