/* curl.c - what every libcurl user of patchgate shares: the one-time
 * global initialisation, the options every transfer gets (no signals,
 * only the protocols asked for, never a redirect followed, an error
 * buffer, timeouts), and the one translation of a CURLcode into a
 * PgateErrorCode.  Jenkins, Patchwork and SMTP each used to have their
 * own copy of all three, and they had drifted apart (a malformed URL was
 * transient for one and a configuration error for another).
 *
 * Only the clients that talk to servers link this file: the delivery
 * hook, which links common/ too, never references it.
 */
#include "common/pgate-common.h"

#include <curl/curl.h>
#include <string.h>

void
pgate_curl_init(void)
{
	static gsize done;

	if (g_once_init_enter(&done)) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		g_once_init_leave(&done, 1);
	}
}

void
pgate_curl_setup(CURL *e, const char *protocols, char *errbuf)
{
	errbuf[0] = '\0';
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, protocols);
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, protocols);
#else
	{
		long mask = 0;

		if (strstr(protocols, "http"))
			mask |= CURLPROTO_HTTP | CURLPROTO_HTTPS;
		if (strstr(protocols, "smtp"))
			mask |= CURLPROTO_SMTP | CURLPROTO_SMTPS;
		curl_easy_setopt(e, CURLOPT_PROTOCOLS, mask);
		curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS, mask);
	}
#endif
}

void
pgate_curl_timeouts(CURL *e, gint64 total_ms, gint64 connect_ms)
{
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)MAX(total_ms, 1));
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)MAX(connect_ms, 1));
}

PgateErrorCode
pgate_curl_error_code(int code)
{
	switch ((CURLcode)code) {
	/* the network or the server, now: may work later */
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_HTTP3:
	case CURLE_QUIC_CONNECT_ERROR:
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_AGAIN:
	case CURLE_OUT_OF_MEMORY:
		return PGATE_ERROR_IO;
	/* what the configuration says (URL, TLS trust, credentials) */
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_NOT_BUILT_IN:
	case CURLE_USE_SSL_FAILED:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_LOGIN_DENIED:
	case CURLE_AUTH_ERROR:
		return PGATE_ERROR_CONFIG;
	default:
		return PGATE_ERROR_FAILED;
	}
}

const char *
pgate_curl_message(int code, const char *errbuf)
{
	return errbuf && errbuf[0] ? errbuf : curl_easy_strerror((CURLcode)code);
}
