/* Echoing untrusted text (option values, paths, environment values) in one-line messages.
 *
 * A value echoed in an error message is copied with every byte that would not print as itself
 * escaped as \xNN: control characters (newline, carriage return, tab, ESC, ...), DEL, bytes that
 * are not part of a valid UTF-8 sequence, and the code points a terminal acts on instead of
 * printing (C1 controls U+0080..U+009F, bidirectional overrides U+202A..U+202E and
 * U+2066..U+2069). Valid printable UTF-8 is kept as it is. So a value with a newline cannot turn
 * a "one line" message into several, nor move the cursor or recolour the terminal.
 *
 * A backslash is not escaped: escaping is idempotent (escaping an escaped message changes
 * nothing), so a whole message can be escaped again by whoever prints it.
 *
 * Never allocates and touches no global state: usable in the preload library's constructor.
 */
#ifndef THPEMU_UTIL_TEXT_H
#define THPEMU_UTIL_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* Copy s into buf (len bytes, always NUL-terminated when len > 0), escaped as above. A value
 * that does not fit is cut before a whole character or escape and ends in "...". s == NULL is
 * copied as "(null)". Returns buf. */
const char *text_escape(const char *s, char *buf, size_t len);

/* The length of the valid UTF-8 sequence at s (1..4), or 0 if s does not start one. Overlong
 * forms, surrogates and code points above U+10FFFF are invalid. */
size_t text_utf8_len(const unsigned char *s);

/* Write s to f with <, >, & and " as HTML entities (for element text and quoted attribute
 * values); s == NULL writes nothing. */
void text_html_escape(FILE *f, const char *s);

#endif
