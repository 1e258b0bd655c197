/* sha.c - SHA-256 and SHA-1, with the CPU's SHA extensions where it has
 * them (x86-64), else GLib's GChecksum. */
#include "common/pgate-common.h"

#include <string.h>

/* ---- SHA-256 ---------------------------------------------------------- */

/*
 * The content hash runs over every byte of every message, and GLib's
 * SHA-256 costs more than a tenth of a parse (26 us for 6 KB here).
 * Where the CPU has the SHA extensions the blocks are hashed with them
 * (about 1.5 GB/s), else GChecksum does the work.  The tests check one
 * against the other.
 */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && defined(__GLIBC__)
#define HAVE_SHA_NI 1
#include <immintrin.h>
#include <sys/platform/x86.h>
#endif

static const guint32 sha256_iv[8] = {
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
	0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

#ifdef HAVE_SHA_NI
static const guint32 sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

/*
 * The SHA instructions keep the state as ABEF and CDGH and do two rounds
 * per sha256rnds2; sha256msg1/msg2 compute the message schedule four
 * words at a time: W[t] = W[t-16] + s0(W[t-15]) + W[t-7] + s1(W[t-2]).
 */
__attribute__((target("sha,sse4.1,ssse3")))
static void
sha256_blocks_ni(guint32 h[8], const guint8 *p, gsize blocks)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL,
					     0x0405060700010203LL);
	__m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)h),
					0xb1);                     /* CDAB */
	__m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128(
		(const __m128i *)(h + 4)), 0x1b);                  /* EFGH */
	__m128i s0 = _mm_alignr_epi8(tmp, s1, 8);                  /* ABEF */

	s1 = _mm_blend_epi16(s1, tmp, 0xf0);                       /* CDGH */
	for (; blocks > 0; blocks--, p += 64) {
		__m128i abef = s0, cdgh = s1, w[4];

		for (int i = 0; i < 4; i++)
			w[i] = _mm_shuffle_epi8(_mm_loadu_si128(
				(const __m128i *)(p + 16 * i)), bswap);
		for (int i = 0; i < 16; i++) {
			__m128i wk = _mm_add_epi32(w[i & 3], _mm_loadu_si128(
				(const __m128i *)(sha256_k + 4 * i)));
			__m128i x;

			s1 = _mm_sha256rnds2_epu32(s1, s0, wk);
			s0 = _mm_sha256rnds2_epu32(s0, s1,
						   _mm_shuffle_epi32(wk, 0x0e));
			if (i >= 12)
				continue;
			/* w[i & 3] is done with: it becomes words 4i+16.. */
			x = _mm_sha256msg1_epu32(w[i & 3], w[(i + 1) & 3]);
			x = _mm_add_epi32(x, _mm_alignr_epi8(
				w[(i + 3) & 3], w[(i + 2) & 3], 4));
			w[i & 3] = _mm_sha256msg2_epu32(x, w[(i + 3) & 3]);
		}
		s0 = _mm_add_epi32(s0, abef);
		s1 = _mm_add_epi32(s1, cdgh);
	}
	tmp = _mm_shuffle_epi32(s0, 0x1b);                         /* FEBA */
	s1 = _mm_shuffle_epi32(s1, 0xb1);                          /* DCHG */
	_mm_storeu_si128((__m128i *)h, _mm_blend_epi16(tmp, s1, 0xf0));
	_mm_storeu_si128((__m128i *)(h + 4), _mm_alignr_epi8(s1, tmp, 8));
}

/*
 * glibc's dynamic loader has already run CPUID and keeps the answers;
 * asking it costs a load.  A CPUID of our own costs a trap to the
 * hypervisor on a virtual machine (about 35 us per delivery here).
 */
static gboolean
cpu_has_sha(void)
{
	return CPU_FEATURE_ACTIVE(SHA) && CPU_FEATURE_ACTIVE(SSE4_1) &&
	       CPU_FEATURE_ACTIVE(SSSE3);
}
#else
static gboolean
cpu_has_sha(void)
{
	return FALSE;
}

static void
sha256_blocks_ni(guint32 h[8], const guint8 *p, gsize blocks)
{
	g_assert_not_reached();
}
#endif

/* The Merkle-Damgard part both hashes share: 64-byte blocks through
 * @blocks, the length in bits (big-endian) after the 0x80 padding, the
 * chaining value's @words as the digest.  Inlined into each wrapper, so
 * the block function is a direct call. */
typedef void (*ShaBlocks)(guint32 *h, const guint8 *p, gsize blocks);

static void
sha_init(PgateShaState *s, GChecksumType type, const guint32 *iv, gsize words)
{
	memset(s, 0, sizeof *s);
	if (!cpu_has_sha())
		s->slow = g_checksum_new(type);
	memcpy(s->h, iv, words * sizeof *iv);
}

static inline void
sha_update(PgateShaState *s, const void *data, gsize len, ShaBlocks blocks)
{
	const guint8 *p = data;

	if (s->slow != NULL) {
		g_checksum_update(s->slow, p, (gssize)len);
		return;
	}
	s->bytes += len;
	if (s->fill > 0) {
		gsize n = MIN(len, 64 - s->fill);

		memcpy(s->block + s->fill, p, n);
		s->fill += n;
		p += n;
		len -= n;
		if (s->fill < 64)
			return;
		blocks(s->h, s->block, 1);
		s->fill = 0;
	}
	if (len >= 64)
		blocks(s->h, p, len / 64);
	memcpy(s->block, p + len / 64 * 64, len % 64);
	s->fill = len % 64;
}

static inline void
sha_finish(PgateShaState *s, guint8 *out, gsize words, ShaBlocks blocks)
{
	guint64 bits = s->bytes * 8;
	guint8 pad[72] = { 0x80 };
	gsize padlen = (s->fill < 56 ? 56 : 120) - s->fill;

	if (s->slow != NULL) {
		gsize len = words * 4;

		g_checksum_get_digest(s->slow, out, &len);
		g_clear_pointer(&s->slow, g_checksum_free);
		return;
	}
	for (int i = 0; i < 8; i++)
		pad[padlen + i] = (guint8)(bits >> (56 - 8 * i));
	sha_update(s, pad, padlen + 8, blocks);
	for (gsize i = 0; i < words; i++) {
		out[4 * i] = (guint8)(s->h[i] >> 24);
		out[4 * i + 1] = (guint8)(s->h[i] >> 16);
		out[4 * i + 2] = (guint8)(s->h[i] >> 8);
		out[4 * i + 3] = (guint8)s->h[i];
	}
}

void
pgate_sha256_init(PgateSha256 *s)
{
	sha_init(&s->st, G_CHECKSUM_SHA256, sha256_iv, 8);
}

void
pgate_sha256_update(PgateSha256 *s, const void *data, gsize len)
{
	sha_update(&s->st, data, len, sha256_blocks_ni);
}

void
pgate_sha256_finish(PgateSha256 *s, guint8 out[32])
{
	sha_finish(&s->st, out, 8, sha256_blocks_ni);
}

/* ---- SHA-1, for patch-ids --------------------------------------------- */

/*
 * git patch-id hashes every diff line (without its whitespace) with
 * SHA-1: GLib's cost a tenth of a patch's parse, a call per line.  Same
 * scheme as SHA-256 above: the SHA extensions where the CPU has them,
 * else GChecksum.
 */
#ifdef HAVE_SHA_NI
/*
 * sha1rnds4 does four rounds (its immediate picks f and K for rounds
 * 0-19, 20-39 ...) on ABCD with E plus four schedule words, which
 * sha1nexte computes from the E of four rounds before; sha1msg1/msg2
 * and an XOR compute the schedule W[t] = rol(W[t-3] ^ W[t-8] ^ W[t-14] ^
 * W[t-16], 1) four words at a time.  g counts the groups of four rounds.
 */
__attribute__((target("sha,sse4.1,ssse3")))
static void
sha1_blocks_ni(guint32 h[5], const guint8 *p, gsize blocks)
{
	const __m128i bswap = _mm_set_epi64x(0x0001020304050607LL,
					     0x08090a0b0c0d0e0fLL);
	__m128i abcd = _mm_shuffle_epi32(
		_mm_loadu_si128((const __m128i *)h), 0x1b);
	__m128i e0 = _mm_set_epi32((int)h[4], 0, 0, 0);

	for (; blocks > 0; blocks--, p += 64) {
		__m128i abcd_save = abcd, e_save = e0, e1 = e0, w[4];

		for (int g = 0; g < 20; g++) {
			int k = g & 3;
			__m128i *e_in = g % 2 == 0 ? &e0 : &e1;
			__m128i *e_out = g % 2 == 0 ? &e1 : &e0;

			if (g < 4)
				w[k] = _mm_shuffle_epi8(_mm_loadu_si128(
					(const __m128i *)(p + 16 * g)), bswap);
			*e_in = g == 0 ? _mm_add_epi32(e0, w[0]) :
				_mm_sha1nexte_epu32(*e_in, w[k]);
			*e_out = abcd;
			if (g >= 3 && g <= 18)
				w[(k + 1) & 3] = _mm_sha1msg2_epu32(
					w[(k + 1) & 3], w[k]);
			switch (g / 5) {
			case 0: abcd = _mm_sha1rnds4_epu32(abcd, *e_in, 0); break;
			case 1: abcd = _mm_sha1rnds4_epu32(abcd, *e_in, 1); break;
			case 2: abcd = _mm_sha1rnds4_epu32(abcd, *e_in, 2); break;
			default: abcd = _mm_sha1rnds4_epu32(abcd, *e_in, 3); break;
			}
			if (g >= 1 && g <= 16)
				w[(k + 3) & 3] = _mm_sha1msg1_epu32(
					w[(k + 3) & 3], w[k]);
			if (g >= 2 && g <= 17)
				w[(k + 2) & 3] = _mm_xor_si128(w[(k + 2) & 3],
							       w[k]);
		}
		e0 = _mm_sha1nexte_epu32(e0, e_save);
		abcd = _mm_add_epi32(abcd, abcd_save);
	}
	_mm_storeu_si128((__m128i *)h, _mm_shuffle_epi32(abcd, 0x1b));
	h[4] = (guint32)_mm_extract_epi32(e0, 3);
}
#else
static void
sha1_blocks_ni(guint32 h[5], const guint8 *p, gsize blocks)
{
	g_assert_not_reached();
}
#endif

void
pgate_sha1_init(PgateSha1 *s)
{
	static const guint32 iv[5] = {
		0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0,
	};

	sha_init(&s->st, G_CHECKSUM_SHA1, iv, 5);
}

void
pgate_sha1_update(PgateSha1 *s, const void *data, gsize len)
{
	sha_update(&s->st, data, len, sha1_blocks_ni);
}

void
pgate_sha1_finish(PgateSha1 *s, guint8 out[20])
{
	sha_finish(&s->st, out, 5, sha1_blocks_ni);
}

void
pgate_hex_encode(char *out, const guint8 *in, gsize len)
{
	static const char digits[] = "0123456789abcdef";

	for (gsize i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * len] = '\0';
}
