/* relay.c - whom a relayed message speaks for (issue #41, finding 1).
 *
 * Some mail reaches a list through a relay that sends it under its own
 * address.  Trust must never be granted to the relay's address, which
 * anybody can make the relay send from:
 *
 *  - B4 Relay (https://b4.docs.kernel.org/en/latest/contributor/send.html,
 *    the web endpoint kernel.org runs) sends a confirmed user's series as
 *    "Name via B4 Relay <devnull+LOCAL.DOMAIN@kernel.org>", with the
 *    user's own address in X-Original-From (and Reply-To, and an in-body
 *    From on each patch).  kernel.org's DKIM signs it, so a domain glob
 *    such as *@kernel.org would trust every relay user.  The relay
 *    confirmed the user's address before it sent anything (the user
 *    answered a mail to it), so the identity it vouches for is that
 *    address; it is believed only when the two places the relay writes it
 *    agree: the devnull+LOCAL.DOMAIN address (which the DKIM signature
 *    covers) and X-Original-From (and X-Endpoint-Received's "for ADDR",
 *    when there is one).
 *  - A list that rewrites From to its own address (Mailman's and Google
 *    Groups' DMARC mitigation: "Name via List <list@host>") vouches for
 *    nobody: it rewrites because the original sender's domain could not
 *    be authenticated through it, and it does not check who posted.
 *    Such mail speaks for no one: it grants nothing (the maintainer's
 *    approval still can).  It is recognised by its From being the list's
 *    own address, as List-Post or List-Id give it (Patchwork's
 *    get_original_sender() uses the project's list address the same way).
 *
 * Pure functions over the raw bytes, as address.c's; every value is
 * bounded by pgate_mail_header_values().
 */
#include "ingest/ingest-private.h"

#include <string.h>

#define MAX_FIELD 4096

#define B4_RELAY_PREFIX "devnull+"
#define B4_RELAY_DOMAIN "kernel.org"

/* The one value of field @name, %NULL when there is none; an error when
 * there are several or it is over MAX_FIELD. */
static char *
one_value(const char *raw, gsize len, const char *name, gboolean *out_many,
	  GError **error)
{
	g_autoptr(GPtrArray) v = pgate_mail_header_values(raw, len, name, 2,
							  MAX_FIELD, error);

	*out_many = FALSE;
	if (v == NULL)
		return NULL;
	if (v->len > 1)
		*out_many = TRUE;
	return v->len == 0 ? NULL : g_strdup(v->pdata[0]);
}

/* The lowercased "LOCAL.DOMAIN" B4 Relay encodes @addr as. */
static char *
b4_encoding(const char *addr)
{
	g_autofree char *s = g_ascii_strdown(addr, -1);
	char *at = strrchr(s, '@');

	if (at == NULL)
		return NULL;
	*at = '.';
	return g_steal_pointer(&s);
}

/* B4 Relay mail: the X-Original-From address, when it is the one the
 * devnull address encodes (@enc). */
static char *
b4_identity(const char *raw, gsize len, const char *enc, GError **error)
{
	g_autoptr(GError) local = NULL;
	g_autofree char *xof = NULL, *addr = NULL, *want = NULL, *ep = NULL;
	gboolean many;

	xof = one_value(raw, len, "X-Original-From", &many, &local);
	if (local != NULL) {
		g_propagate_prefixed_error(error, g_steal_pointer(&local),
					   "B4 Relay mail: ");
		return NULL;
	}
	if (xof == NULL || many) {
		g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID,
			    "B4 Relay mail with %s X-Original-From field",
			    many ? "more than one" : "no");
		return NULL;
	}
	addr = pgate_mail_address_strict(xof, &local);
	if (addr == NULL) {
		g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID,
			    "B4 Relay mail whose X-Original-From is %s",
			    local->message);
		return NULL;
	}
	want = b4_encoding(addr);
	if (want == NULL || g_ascii_strcasecmp(want, enc) != 0) {
		g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID,
			    "B4 Relay mail from " B4_RELAY_PREFIX "%s@"
			    B4_RELAY_DOMAIN " whose X-Original-From is %s",
			    enc, addr);
		return NULL;
	}
	/* "by B4 Relay for ADDR/KEY with auth_id=N": the endpoint's record
	 * of whom it sent for, when it wrote one */
	ep = one_value(raw, len, "X-Endpoint-Received", &many, NULL);
	if (ep != NULL) {
		const char *f = strstr(ep, " for ");
		gsize n;

		if (f == NULL || many) {
			g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID,
				    "B4 Relay mail whose X-Endpoint-Received "
				    "names nobody");
			return NULL;
		}
		f += 5;
		n = strcspn(f, "/ \t");
		if (n != strlen(addr) || g_ascii_strncasecmp(f, addr, n) != 0) {
			g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID,
				    "B4 Relay mail sent for %.*s, not %s",
				    (int)MIN(n, 256), f, addr);
			return NULL;
		}
	}
	return g_steal_pointer(&addr);
}

/* Whether @addr is the list's own address: the mailto: of List-Post, or
 * the address List-Id's "<LOCAL.DOMAIN>" spells. */
static gboolean
is_list_address(const char *raw, gsize len, const char *addr)
{
	g_autofree char *post = NULL, *id = NULL, *enc = b4_encoding(addr);
	gboolean many;
	const char *m;

	post = one_value(raw, len, "List-Post", &many, NULL);
	for (m = post; m != NULL && (m = strstr(m, "mailto:")) != NULL;) {
		gsize n;

		m += 7;
		n = strcspn(m, ">?, \t");
		if (n == strlen(addr) && g_ascii_strncasecmp(m, addr, n) == 0)
			return TRUE;
	}
	id = one_value(raw, len, "List-Id", &many, NULL);
	if (id != NULL && enc != NULL) {
		const char *lt = strrchr(id, '<');
		const char *gt = lt ? strchr(lt, '>') : NULL;

		if (gt != NULL && (gsize)(gt - lt - 1) == strlen(enc) &&
		    g_ascii_strncasecmp(lt + 1, enc, strlen(enc)) == 0)
			return TRUE;
	}
	return FALSE;
}

char *
pgate_mail_relayed_sender(const char *raw, gsize len, const char *from_addr,
			  char **out_relay, GError **error)
{
	const char *at = strrchr(from_addr, '@');

	if (out_relay != NULL)
		*out_relay = NULL;
	g_return_val_if_fail(at != NULL, NULL);
	if (g_ascii_strncasecmp(from_addr, B4_RELAY_PREFIX,
				strlen(B4_RELAY_PREFIX)) == 0 &&
	    g_ascii_strcasecmp(at + 1, B4_RELAY_DOMAIN) == 0) {
		g_autofree char *enc = g_strndup(
			from_addr + strlen(B4_RELAY_PREFIX),
			(gsize)(at - from_addr) - strlen(B4_RELAY_PREFIX));
		char *id = b4_identity(raw, len, enc, error);

		if (id != NULL && out_relay != NULL)
			*out_relay = g_strdup("B4 Relay");
		return id;
	}
	if (is_list_address(raw, len, from_addr)) {
		g_set_error(error, PGATE_INGEST_ERROR, PGATE_ERROR_INVALID,
			    "From is the list's own address %s (the list "
			    "rewrote it): nobody vouches for the original "
			    "sender", from_addr);
		return NULL;
	}
	return g_strdup(from_addr);
}
