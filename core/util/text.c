/* Escaping untrusted text for one-line messages (see text.h). */
#include "util/text.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

size_t text_utf8_len(const unsigned char *s)
{
	uint32_t cp;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0; /* a continuation byte, 0xc0/0xc1 (overlong) or above 0xf4 */
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0; /* also stops at the terminating NUL */
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* A valid sequence a terminal would act on rather than print. */
static bool is_control_cp(const unsigned char *s, size_t n)
{
	if (n == 1)
		return s[0] < 0x20 || s[0] == 0x7f;
	if (n == 2) /* C1 controls U+0080..U+009F: 0xc2 0x80..0x9f */
		return s[0] == 0xc2 && s[1] < 0xa0;
	if (n == 3 && s[0] == 0xe2 && s[1] == 0x80) /* U+202A..U+202E */
		return s[2] >= 0xaa && s[2] <= 0xae;
	if (n == 3 && s[0] == 0xe2 && s[1] == 0x81) /* U+2066..U+2069 */
		return s[2] >= 0xa6 && s[2] <= 0xa9;
	return false;
}

/* The next character at p: its length (1 for an invalid byte) and whether it is escaped. */
static size_t next_char(const unsigned char *p, bool *esc)
{
	size_t n = text_utf8_len(p);

	*esc = !n || is_control_cp(p, n);
	return n ? n : 1;
}

/* The length of p escaped, without the NUL. */
static size_t escaped_len(const unsigned char *p)
{
	size_t total = 0;
	bool esc;

	while (*p) {
		size_t n = next_char(p, &esc);

		total += esc ? 4 * n : n;
		p += n;
	}
	return total;
}

/* Append the n bytes of one character, escaped or not (the caller checked the room). */
static void put(char *buf, size_t *off, const unsigned char *c, size_t n, bool esc)
{
	static const char hex[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		if (!esc) {
			buf[(*off)++] = (char)c[i];
			continue;
		}
		buf[(*off)++] = '\\';
		buf[(*off)++] = 'x';
		buf[(*off)++] = hex[c[i] >> 4];
		buf[(*off)++] = hex[c[i] & 15];
	}
}

const char *text_escape(const char *s, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "(null)");
	bool cut = escaped_len(p) + 1 > len;
	size_t off = 0, room;
	bool esc;

	if (!len)
		return buf;
	if (cut && len < 4) {
		buf[0] = '\0';
		return buf;
	}
	room = cut ? len - 4 : len - 1; /* keep room for "..." when the value is cut */
	while (*p) {
		size_t n = next_char(p, &esc);

		if (off + (esc ? 4 * n : n) > room)
			break;
		put(buf, &off, p, n, esc);
		p += n;
	}
	if (cut) {
		memcpy(buf + off, "...", 3);
		off += 3;
	}
	buf[off] = '\0';
	return buf;
}

void text_html_escape(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}
