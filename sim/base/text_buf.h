/* text_buf.h — a growable byte buffer for writers that assemble a file's text piece by piece (the
 * step trace, the CSV and JSON exports).
 *
 * Zero-initialize (text_buf t = {0}); text_put appends n bytes and keeps s NUL-terminated, so that s
 * is a C string of n bytes once anything was put (NULL before); text_free releases it. Growth doubles
 * the capacity from 64 KiB; allocation failure aborts (moe_xrealloc, sim/base/alloc.h). Setting n = 0
 * empties the buffer and keeps its memory. */
#ifndef MOESIM_TEXT_BUF_H
#define MOESIM_TEXT_BUF_H

#include <stddef.h>
#include <string.h>

typedef struct {
    char *s;
    size_t n, cap;
} text_buf;

void text_reserve(text_buf *t, size_t more);   /* room for `more` bytes and the NUL */

/* Inline: a trace puts tens of millions of short pieces, most of them one to a few bytes. */
static inline void text_put(text_buf *t, const char *p, size_t n) {
    if (t->n + n + 1 > t->cap) text_reserve(t, n);
    memcpy(t->s + t->n, p, n);
    t->n += n;
    t->s[t->n] = '\0';
}

void text_puts(text_buf *t, const char *p);   /* a C string */
void text_put_ull(text_buf *t, unsigned long long v);   /* decimal digits, as "%llu" prints them */
void text_put_ll(text_buf *t, long long v);             /* as "%lld" */
void text_free(text_buf *t);

#endif
