/* test-relay.c - whom a relayed message speaks for (ingest/relay.c, issue
 * #41 finding 1): B4 Relay mail speaks for the relay's confirmed user
 * when its fields agree, list-rewritten mail for nobody, and everything
 * else for its From address.
 *
 * The headers are shaped as B4 Relay and Mailman write them (the fields
 * of real linux-spi mail sent through the relay: X-Endpoint-Received,
 * X-Original-From, Reply-To), with made-up people.
 */
#include "ingest/ingest.h"

#include <string.h>

typedef struct {
	const char *what;
	const char *header;     /* the fields, From first */
	const char *identity;   /* NULL: refused */
	const char *error;      /* a part of the refusal */
	gboolean relayed;
} Case;

#define B4_FROM "From: Alice Example via B4 Relay\n" \
	"        <devnull+alice.example.gmail.com@kernel.org>\n"
#define B4_EP "X-Endpoint-Received: by B4 Relay for " \
	"alice.example@gmail.com/20230718 with auth_id=65\n"
#define B4_XOF "X-Original-From: Alice Example <alice.example@gmail.com>\n"

static const Case cases[] = {
	{ "direct mail speaks for its From",
	  "From: Alice <alice@kernel.org>\n", "alice@kernel.org", NULL, FALSE },
	{ "an X-Original-From on direct mail changes nothing",
	  "From: Mallory <mallory@evil.example>\n"
	  "X-Original-From: Alice <alice@kernel.org>\n",
	  "mallory@evil.example", NULL, FALSE },
	{ "B4 Relay: the confirmed user",
	  B4_FROM B4_EP B4_XOF "Reply-To: <alice.example@gmail.com>\n",
	  "alice.example@gmail.com", NULL, TRUE },
	{ "B4 Relay without X-Endpoint-Received: X-Original-From alone",
	  B4_FROM B4_XOF, "alice.example@gmail.com", NULL, TRUE },
	{ "B4 Relay, any case",
	  "From: A via B4 Relay <DevNull+Alice.Example.Gmail.COM@Kernel.org>\n"
	  "x-original-from: alice.example@GMAIL.com\n",
	  "alice.example@gmail.com", NULL, TRUE },
	{ "B4 Relay without X-Original-From speaks for nobody",
	  B4_FROM B4_EP, NULL, "no X-Original-From", TRUE },
	{ "B4 Relay with two X-Original-From",
	  B4_FROM B4_XOF "X-Original-From: Bob <bob@kernel.org>\n", NULL,
	  "more than one X-Original-From", TRUE },
	{ "B4 Relay whose X-Original-From is somebody else",
	  B4_FROM "X-Original-From: Linus <torvalds@kernel.org>\n", NULL,
	  "whose X-Original-From is torvalds@kernel.org", TRUE },
	{ "B4 Relay whose X-Original-From is no plain mailbox",
	  B4_FROM "X-Original-From: alice.example@gmail.com@evil.example\n",
	  NULL, "X-Original-From is", TRUE },
	{ "B4 Relay sent for another user than X-Original-From",
	  B4_FROM "X-Endpoint-Received: by B4 Relay for mallory@evil.example/1"
	  " with auth_id=9\n" B4_XOF, NULL, "sent for mallory@evil.example",
	  TRUE },
	{ "the bare relay address (no user encoded)",
	  "From: devnull+@kernel.org\n" B4_XOF, NULL,
	  "whose X-Original-From is", TRUE },
	{ "devnull+ at another domain is no B4 Relay",
	  "From: devnull+alice.example.gmail.com@example.org\n" B4_XOF,
	  "devnull+alice.example.gmail.com@example.org", NULL, FALSE },
	{ "Mailman's DMARC rewrite: From is the list (List-Post)",
	  "From: Alice via Linux-foo <linux-foo@lists.example.org>\n"
	  "Reply-To: Alice <alice@kernel.org>\n"
	  "List-Post: <mailto:linux-foo@lists.example.org>\n",
	  NULL, "the list's own address", FALSE },
	{ "Google Groups' rewrite: X-Original-From is not believed",
	  "From: 'Alice' via dev <dev@googlegroups.com>\n"
	  "X-Original-From: Alice <alice@kernel.org>\n"
	  "List-Post: <https://groups.google.com/group/dev/post>,\n"
	  " <mailto:dev@googlegroups.com>\n",
	  NULL, "the list's own address", FALSE },
	{ "the list's address as List-Id spells it",
	  "From: Alice via linux-spi <linux-spi@vger.kernel.org>\n"
	  "List-ID: <linux-spi.vger.kernel.org>\n",
	  NULL, "the list's own address", FALSE },
	{ "a list member's own mail is not rewritten",
	  "From: Alice <alice@kernel.org>\n"
	  "List-Post: <mailto:linux-spi@vger.kernel.org>\n"
	  "List-ID: <linux-spi.vger.kernel.org>\n",
	  "alice@kernel.org", NULL, FALSE },
};

static void
test_table(void)
{
	for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
		const Case *c = &cases[i];
		g_autofree char *raw = g_strdup_printf(
			"%sSubject: x\nMessage-ID: <x@y>\n\nbody\n", c->header);
		g_autoptr(GPtrArray) from = pgate_mail_header_values(
			raw, strlen(raw), "From", 1, 4096, NULL);
		g_autofree char *addr = NULL, *id = NULL, *relay = NULL;
		g_autoptr(GError) error = NULL;

		g_test_message("%s", c->what);
		g_assert_nonnull(from);
		g_assert_cmpuint(from->len, ==, 1);
		addr = pgate_mail_address_strict(from->pdata[0], NULL);
		g_assert_nonnull(addr);
		id = pgate_mail_relayed_sender(raw, strlen(raw), addr, &relay,
					       &error);
		g_assert_cmpstr(id, ==, c->identity);
		if (c->identity == NULL) {
			g_assert_error(error, PGATE_INGEST_ERROR,
				       PGATE_ERROR_INVALID);
			g_assert_nonnull(strstr(error->message, c->error));
			g_assert_null(relay);
		} else {
			g_assert_no_error(error);
			g_assert_cmpstr(relay, ==, c->relayed ? "B4 Relay" : NULL);
		}
	}
}

int
main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	g_test_add_func("/relay/table", test_table);
	return g_test_run();
}
